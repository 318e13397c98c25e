//! Teams as files: `swarm team init` writes a definition that `swarm team check` accepts,
//! `check` names the line at fault, and `swarm run --team-def` starts the defined team
//! (two members on two scripted model servers, of two wire protocols, one in plan mode)
//! that a scripted lead runs to the end: both members finish the tasks assigned to them,
//! the plan is approved by the lead, the team is shut down, and nothing is left running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run};
use crate::main_job::{our_processes, tmux_panes};

const T: Duration = Duration::from_secs(120);

/// A project directory (with a `.claude/`, so it is found as the project from inside it).
fn project(env: &TestEnv) -> PathBuf {
    let dir = env.dir.path().join("proj");
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    dir
}

fn write_def(project: &Path, name: &str, text: &str) -> PathBuf {
    let dir = project.join(".swarm/teams");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn init_writes_an_example_that_check_accepts_and_never_overwrites() {
    let env = TestEnv::new();
    let proj = project(&env);
    let in_proj = |args: &[&str]| {
        let mut cmd = env.swarm(args);
        cmd.current_dir(&proj);
        run(&mut cmd)
    };
    let out = in_proj(&["team", "init", "duo"]).success();
    let path = proj.join(".swarm/teams/duo.toml");
    assert!(
        out.stdout
            .contains(&format!("wrote team definition {}", path.display())),
        "{}",
        out.stdout
    );
    let example = std::fs::read_to_string(&path).unwrap();
    assert!(example.contains("[[member]]") && example.contains("{goal}"));
    // Not among the running teams' directories.
    assert!(!env.root.join("teams").exists());

    let edited = example.replace("builder", "tester");
    std::fs::write(&path, &edited).unwrap();
    let again = in_proj(&["team", "init", "duo"]).failure(4);
    assert!(again.stderr.contains("exists"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);

    let out = in_proj(&["team", "check", "duo"]).success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].ends_with("duo.toml: ok, 2 member(s), with a goal template"),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains("architect") && lines[1].contains("plan mode"),
        "{}",
        out.stdout
    );
    assert!(
        lines[2].contains("tester") && !lines[2].contains("plan mode"),
        "{}",
        out.stdout
    );
    // By path too, and every definition of the project without a name.
    in_proj(&["team", "check", &path.display().to_string()]).success();
    let all = in_proj(&["--json", "team", "check"]).success();
    let defs: Value = serde_json::from_str(&all.stdout).unwrap();
    assert_eq!(defs[0]["members"][0]["planMode"], true, "{defs}");
    assert_eq!(defs[0]["members"][1]["name"], "tester", "{defs}");
}

#[test]
fn check_and_run_refuse_a_bad_definition_naming_its_line() {
    let env = TestEnv::new();
    let proj = project(&env);
    let member = "[[member]]\nname = \"alice\"\n";
    let cases = [
        ("unknown-key", format!("{member}modle = \"x\"\n")),
        (
            "bad-name",
            "[[member]]\nname = \"Alice Smith\"\n".to_owned(),
        ),
        ("twice", format!("{member}\n{member}")),
        ("provider", format!("{member}provider = \"acme\"\n")),
        ("mode", format!("{member}permission_mode = \"yolo\"\n")),
        ("isolation", format!("{member}isolation = \"docker\"\n")),
        ("colour", format!("{member}color = \"mauve\"\n")),
        ("plan", format!("{member}plan_mode = \"yes\"\n")),
        ("agent-type", format!("{member}agent_type = \"wizard\"\n")),
        (
            "template",
            format!("[lead]\ngoal = \"do it well\"\n\n{member}"),
        ),
        ("toml", format!("{member}prompt = \"unclosed\n")),
        ("no-members", "[lead]\n".to_owned()),
    ];
    let mut said = String::new();
    for (name, text) in &cases {
        write_def(&proj, name, text);
        let mut cmd = env.swarm(&["team", "check", name]);
        cmd.current_dir(&proj);
        let out = run(&mut cmd).failure(2);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        said.push_str(&out.stderr);
    }
    let mut cmd = env.swarm(&["team", "check", "absent"]);
    cmd.current_dir(&proj);
    said.push_str(&run(&mut cmd).failure(3).stderr);
    env.snapshot_settings()
        .bind(|| insta::assert_snapshot!("team_def_check_errors", said));

    // `swarm run` refuses it the same way, before it makes a team or a pane.
    let mut cmd = env.swarm(&[
        "run",
        "a goal",
        "--team-def",
        "twice",
        "--no-attach",
        "--provider",
        "scripted",
    ]);
    cmd.current_dir(&proj);
    let out = run(&mut cmd).failure(2);
    assert!(
        out.stderr
            .contains("twice.toml: line 5: name: 'alice' is named twice"),
        "{}",
        out.stderr
    );
    assert!(!env.root.join("teams").exists(), "a team was made");
    assert!(tmux_panes(&env).trim().is_empty(), "{}", tmux_panes(&env));
}

/// The lead: two tasks, each given to one member in the same turn; it approves the plan it
/// is asked for and sums up when told every task is done.
fn lead_script() -> Script {
    let task = |n: &str, who: &str| json!({"subject": format!("Task for {who}"), "description": format!("{who}: finish task #{n} and report.")});
    Script::new()
        .rule(
            Rule::new("lead assigns")
                .agent("team-lead")
                .user_contains("Goal:")
                .no_tool_result(true)
                .reply(
                    Reply::tool("TaskCreate", task("1", "alice"))
                        .tool_call("TaskCreate", task("2", "bob"))
                        .tool_call("TaskUpdate", json!({"taskId": "1", "owner": "alice"}))
                        .tool_call("TaskUpdate", json!({"taskId": "2", "owner": "bob"})),
                ),
        )
        .rule(
            Rule::new("lead approves the plan")
                .agent("team-lead")
                .user_regex(
                    "teammate_id=\"(?P<who>[^\"]+)\"[^>]*>\\n[^\\n]* asks you to approve a plan \\(request id (?P<rid>[^)]+)\\)",
                )
                .reply(Reply::tool(
                    "SendMessage",
                    json!({"to": "{{who}}", "message": {"type": "plan_approval_response", "request_id": "{{rid}}", "approve": true}}),
                )),
        )
        .rule(
            Rule::new("lead sums up")
                .agent("team-lead")
                .user_contains("All tasks are completed")
                .reply(Reply::text("Done: alice and bob finished their tasks.")),
        )
        .default_reply(Reply::text("Noted."))
}

/// A member: its assigned task finished, with a plan first in plan mode; its first prompt
/// answered slowly, so the lead has given out the tasks by the time it would look for one.
fn member_script(me: &str, task: &str, plans: bool) -> Script {
    let finish = Reply::tool(
        "TaskUpdate",
        json!({"taskId": task, "status": "completed"}),
    )
    .tool_call(
        "SendMessage",
        json!({"to": "team-lead", "summary": format!("task #{task} done"), "message": format!("{me} finished task #{task}.")}),
    );
    let assigned = Rule::new(format!("{me} takes task #{task}"))
        .user_contains(format!("assigned you task #{task}"))
        .no_tool_result(true);
    let script = if plans {
        Script::new()
            .rule(assigned.reply(Reply::tool(
                "ExitPlanMode",
                json!({"plan": format!("Plan for task #{task}: mark it completed and report.")}),
            )))
            .rule(
                Rule::new("after approval")
                    .tool_result_contains("approved your plan")
                    .reply(finish),
            )
    } else {
        Script::new().rule(assigned.reply(finish))
    };
    // Below the assignment: a slow machine may hand both over in one turn.
    let script = script.rule(
        Rule::new("first prompt")
            .user_contains(format!("You are {me}"))
            .delay_ms(1500)
            .reply(Reply::text("ready")),
    );
    script.default_reply(Reply::text("ok"))
}

#[test]
fn a_team_definition_starts_its_members_on_their_providers_and_runs_to_the_end() {
    let env = TestEnv::new();
    let proj = project(&env);
    let lead = ScriptedModel::start(lead_script());
    let alice = ScriptedModel::start(member_script("alice", "1", true));
    let bob = ScriptedModel::start(member_script("bob", "2", false));
    write_def(
        &proj,
        "duo",
        &format!(
            "[lead]\ngoal = \"Team goal: {{goal}}\"\nprovider = \"scripted\"\nbase_url = \"{}\"\n\n\
             [[member]]\nname = \"alice\"\nprovider = \"scripted\"\nbase_url = \"{}\"\n\
             model = \"model-a\"\nplan_mode = true\nprompt = \"You are alice: plan first.\"\n\n\
             [[member]]\nname = \"bob\"\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n\
             model = \"model-b\"\nprompt = \"You are bob: just do it.\"\n",
            lead.url(),
            alice.url(),
            bob.url()
        ),
    );
    let mut cmd = env.swarm(&[
        "run",
        "ship the duo",
        "--team-def",
        "duo",
        "--team",
        "duo",
        "--no-attach",
    ]);
    cmd.current_dir(&proj)
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    let mut running = Guarded(Some(cmd.spawn().unwrap()));
    let status = running.wait(T);
    let out = std::fs::read_to_string(env.dir.path().join("run.out")).unwrap();
    let err = std::fs::read_to_string(env.dir.path().join("run.err")).unwrap();
    if status.is_none_or(|s| !s.success()) {
        env.print_evidence();
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{out}\n{err}"
    );
    assert!(out.contains("Result: done"), "{out}");

    // The lead ran on the model its table names, was told its goal through the template,
    // and of the team that started with it.
    let first = lead
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Goal:"))
        .expect("the lead's first turn");
    let first = first.body["messages"][0].to_string();
    for needle in [
        "Team goal: ship the duo",
        "- alice (agent type general-purpose, model model-a, plan mode: you approve its plans): You are alice: plan first.",
        "- bob (agent type general-purpose, model model-b): You are bob: just do it.",
        "Do not spawn them again",
    ] {
        assert!(first.contains(needle), "{needle} not in {first}");
    }
    assert!(
        lead.requests()
            .iter()
            .all(|r| r.agent() == Some("team-lead"))
    );
    // Each member reached only its own server, on its own wire protocol and model.
    let alice_asked = alice.requests();
    assert!(
        alice_asked
            .iter()
            .any(|r| r.body.to_string().contains("assigned you task #1")),
        "alice never worked on task #1"
    );
    for r in &alice_asked {
        assert_eq!(r.agent(), Some("alice"));
        assert_eq!(
            (r.path.as_str(), &r.body["model"]),
            ("/v1/messages", &json!("model-a"))
        );
    }
    let bob_asked = bob.requests();
    assert!(
        bob_asked
            .iter()
            .any(|r| r.body.to_string().contains("assigned you task #2")),
        "bob never worked on task #2"
    );
    for r in &bob_asked {
        assert_eq!(
            (r.path.as_str(), &r.body["model"]),
            ("/v1/chat/completions", &json!("model-b"))
        );
    }

    // Each task completed by the member it was given to.
    let tasks: Value = serde_json::from_str(
        &env.run(&["--team", "duo", "--json", "task", "list"])
            .success()
            .stdout,
    )
    .unwrap();
    let owner_of = |id: &str| {
        tasks
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| (t["owner"].clone(), t["status"].clone()))
    };
    assert_eq!(
        owner_of("1"),
        Some((json!("alice"), json!("completed"))),
        "{tasks}"
    );
    assert_eq!(
        owner_of("2"),
        Some((json!("bob"), json!("completed"))),
        "{tasks}"
    );
    // alice's plan was approved by the lead, once.
    let approvals: Value = serde_json::from_str(
        &env.run(&["--team", "duo", "--json", "approvals"])
            .success()
            .stdout,
    )
    .unwrap();
    let plans: Vec<&Value> = approvals
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "{approvals}");
    assert_eq!(
        (
            &plans[0]["agent"],
            &plans[0]["state"],
            &plans[0]["resolvedBy"]
        ),
        (&json!("alice"), &json!("approved"), &json!("team-lead")),
        "{approvals}"
    );
    // The lead shut both down: each said yes to its shutdown request (read, or not yet).
    let delivered =
        std::fs::read_to_string(env.root.join("teams/duo/inboxes/team-lead.delivered.jsonl"))
            .unwrap_or_default();
    let mut lead_mail: Vec<(String, String)> = delivered
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["from"].as_str().unwrap_or("").to_owned(),
                v["text"].to_string(),
            )
        })
        .collect();
    lead_mail.extend(env.lead_inbox("duo").into_iter().map(|e| (e.from, e.text)));
    for who in ["alice", "bob"] {
        assert!(
            lead_mail
                .iter()
                .any(|(from, text)| from == who && text.contains("shutdown_approved")),
            "{who} never approved a shutdown: {lead_mail:?}"
        );
    }
    // Nothing left: no process of ours, no pane.
    assert!(
        crate::harness::wait_until(Duration::from_secs(10), || our_processes(&env).is_empty()),
        "left running: {:?}",
        our_processes(&env)
    );
    assert!(tmux_panes(&env).trim().is_empty(), "{}", tmux_panes(&env));
}
