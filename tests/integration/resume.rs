//! `swarm resume`: a team brought back after its lead was killed (`kill -9`) or its tmux
//! server died, with the scripted model. Each teammate's task waits for a gate file the
//! test creates, so the team is stopped at a known point, never by timing luck; the task's
//! side effect is a line in `effects.txt`, so work done twice shows.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};
use swarm_store::tasks::Status;

use crate::harness::{
    Backend, Guarded, ScriptedModel, TestEnv, on_every_backend, run_timeout, wait_until,
};

const LONG: Duration = Duration::from_secs(120);

/// A lead that makes two tasks (each naming the gate file its work waits for) and two
/// teammates; a teammate that runs a task's command, then marks the task completed.
fn script(job: &Path, gates: [&str; 2]) -> Script {
    let effects = job.join("effects.txt");
    let task = |n: usize| {
        json!({
            "subject": format!("job {n}"),
            "activeForm": format!("doing job {n}"),
            "description": format!("Do job {n}. gate={} (wait for it)", gates[n - 1]),
        })
    };
    let teammate = |name: &str| json!({"name": name, "description": "worker", "prompt": format!("You are {name}.")});
    Script::new()
        .rule(
            Rule::new("lead plans")
                .agent("team-lead")
                .user_contains("Goal:")
                .no_tool_result(true)
                .times(1)
                .reply(
                    Reply::tool("TaskCreate", task(1))
                        .tool_call("TaskCreate", task(2))
                        .tool_call("Agent", teammate("alice"))
                        .tool_call("Agent", teammate("bob")),
                ),
        )
        .rule(
            Rule::new("work on a task")
                // A resumed one's turn may follow the result of the call it was in.
                .user_regex(r"(?s)(claimed|Continue) task #(?P<id>\d+).*?gate=(?P<gate>\w+)")
                .reply(Reply::tool(
                    "Bash",
                    json!({
                        "command": format!(
                            "cd {}; while [ ! -f {{{{gate}}}} ]; do sleep 0.2; done; echo task-{{{{id}}}} >> {}; echo EFFECT-DONE {{{{id}}}}",
                            job.display(),
                            effects.display()
                        ),
                        "description": "do the job",
                    }),
                )),
        )
        .rule(
            Rule::new("mark it done")
                .user_regex(r"EFFECT-DONE (?P<id>\d+)")
                .no_tool_result(false)
                .reply(Reply::tool(
                    "TaskUpdate",
                    json!({"taskId": "{{id}}", "status": "completed"}),
                )),
        )
        .default_reply(Reply::text("OK."))
}

fn start_run(env: &TestEnv, model: &ScriptedModel, job: &Path) -> Guarded {
    let mut cmd = env.swarm(&[
        "run",
        "Do the two jobs.",
        "--team",
        "t",
        "--no-attach",
        "--teammates",
        "2",
        "--provider",
        "scripted",
        "--permission-mode",
        "bypassPermissions",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .args(["--cwd", &job.display().to_string()])
        .stdout(std::fs::File::create(env.dir.path().join("run.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("run.err")).unwrap());
    Guarded(Some(cmd.spawn().unwrap()))
}

fn start_resume(env: &TestEnv, job: &Path, extra: &[&str]) -> Guarded {
    let mut cmd = env.swarm(&["resume", "--no-attach"]);
    cmd.args(extra)
        .current_dir(job)
        .stdout(std::fs::File::create(env.dir.path().join("resume.out")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("resume.err")).unwrap());
    Guarded(Some(cmd.spawn().unwrap()))
}

fn read(env: &TestEnv, file: &str) -> String {
    std::fs::read_to_string(env.dir.path().join(file)).unwrap_or_default()
}

fn job_dir(env: &TestEnv) -> PathBuf {
    let job = env.dir.path().join("job");
    std::fs::create_dir_all(&job).unwrap();
    job.canonicalize().unwrap()
}

/// Each task's side effect, counted.
fn effects(job: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(job.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

fn task_states(env: &TestEnv) -> Vec<(String, Status, Option<String>)> {
    env.store("t")
        .tasks()
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !t.is_internal())
        .map(|t| (t.id, t.status, t.owner))
        .collect()
}

fn lead_log(env: &TestEnv) -> String {
    std::fs::read_to_string(env.root.join("teams/t/logs/team-lead.log")).unwrap_or_default()
}

fn lead_pid(env: &TestEnv) -> Option<i32> {
    env.store("t")
        .agents()
        .read_state(&swarm_util::names::AgentName::lead())
        .map(|s| s.pid)
}

/// The text of a request's latest user turn, and of the whole conversation.
fn latest_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

fn agent_requests(model: &ScriptedModel, agent: &str) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.header("x-swarm-agent") == Some(agent))
        .map(|r| r.body)
        .collect()
}

/// The conversation (messages only) of the first request `agent` made after it was
/// resumed: it must carry what it said and was told before.
fn first_resumed_conversation(model: &ScriptedModel, agent: &str) -> String {
    agent_requests(model, agent)
        .into_iter()
        .find(|b| latest_user_text(b).contains("You were resumed"))
        .unwrap_or_else(|| panic!("{agent} made no request after it was resumed"))["messages"]
        .to_string()
}

/// tmux panes tagged for `agent` on the test's server.
fn panes_of(env: &TestEnv, agent: &str) -> usize {
    let out = env
        .tmux_cmd()
        .args(["list-panes", "-a", "-F", "#{@swarm-agent} #{pane_dead}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| *l == format!("{agent} 0"))
        .count()
}

/// Every pane left on the test's tmux server (id, agent tag, dead flag); none once the
/// server is gone.
fn all_panes(env: &TestEnv) -> Vec<String> {
    let out = std::process::Command::new("tmux")
        .args([
            "-L",
            &env.tmux_socket,
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{@swarm-agent} dead=#{pane_dead}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Live `swarm teammate` processes for `agent` in this test's root.
fn teammate_processes(env: &TestEnv, agent: &str) -> usize {
    let marker = format!("SWARM_ROOT={}", env.root.display());
    let name = format!("--agent-name={agent}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| swarm_util::process::is_alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == marker.as_bytes()))
        })
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split('\0').any(|a| a == name) && c.contains("\0teammate\0"))
        })
        .count()
}

fn both_tasks_held(env: &TestEnv) -> bool {
    let t = task_states(env);
    t.len() == 2
        && t.iter()
            .all(|(_, s, o)| *s == Status::InProgress && o.is_some())
}

/// Starts the run of `script` and waits until both teammates hold a task.
fn run_until_both_tasks_held(env: &TestEnv, model: &ScriptedModel, job: &Path) -> Guarded {
    let run = start_run(env, model, job);
    assert!(
        wait_until(LONG, || both_tasks_held(env)),
        "the teammates never took the tasks: {:?}\n{}",
        task_states(env),
        read(env, "run.err")
    );
    env.assert_on_its_backend("t");
    run
}

/// `kill -9` of `agent`'s process, as its state file names it (pid and start time).
fn kill9(env: &TestEnv, agent: &str) -> i32 {
    env.signal_agent("t", agent, nix::sys::signal::Signal::SIGKILL)
}

fn a_killed_lead_is_resumed_and_adopts_its_living_teammates(backend: Backend) {
    let Some(env) = TestEnv::on(backend) else {
        return;
    };
    let job = job_dir(&env);
    let model = ScriptedModel::start(script(&job, ["gate", "gate"]));
    let mut run = run_until_both_tasks_held(&env, &model, &job);
    let pid = kill9(&env, "team-lead");
    run.wait(LONG).expect("swarm run did not end with its lead");

    let mut resume = start_resume(&env, &job, &["t"]);
    // The resumed lead has decided about both teammates before the gate opens.
    let log = env.root.join("teams/t/logs/team-lead.log");
    assert!(
        wait_until(LONG, || {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            log.contains("resume: alice:") && log.contains("resume: bob:")
        }),
        "the lead was not restarted\n{}",
        read(&env, "resume.err")
    );
    assert_ne!(lead_pid(&env), Some(pid));
    // Adopted, not doubled: one live pane and one process each.
    for name in ["alice", "bob"] {
        assert_eq!(panes_of(&env, name), 1, "{name}'s panes");
        assert_eq!(teammate_processes(&env, name), 1, "{name}'s processes");
    }
    std::fs::write(job.join("gate"), "").unwrap();
    let status = resume.wait(LONG).expect("swarm resume did not finish");
    let out = read(&env, "resume.out");
    assert!(
        status.success(),
        "{out}\n{}\nlead log:\n{}",
        read(&env, "resume.err"),
        lead_log(&env)
    );
    assert!(out.contains("Result: done"), "{out}");
    // Each job done once.
    assert_eq!(effects(&job), ["task-1", "task-2"]);
    assert!(
        task_states(&env)
            .iter()
            .all(|(_, s, _)| *s == Status::Completed),
        "{:?}",
        task_states(&env)
    );
    // Only the lead was restarted: the teammates' first turns are their only ones.
    for name in ["alice", "bob"] {
        assert!(
            !agent_requests(&model, name)
                .iter()
                .any(|b| latest_user_text(b).contains("You were resumed")),
            "{name} was restarted although it was alive"
        );
    }
    // The resumed lead remembers: its goal and its own tool calls are in its first request.
    let first = first_resumed_conversation(&model, "team-lead");
    assert!(first.contains("Goal:\\nDo the two jobs."), "{first}");
    assert!(first.contains("\"name\":\"TaskCreate\""), "{first}");
    // A finished resumed run closes its window, as a finished `swarm run` does.
    assert_eq!(all_panes(&env), Vec::<String>::new(), "panes left behind");
}

fn a_teammate_that_died_with_its_lead_is_restarted_beside_its_dead_pane(backend: Backend) {
    let Some(env) = TestEnv::on(backend) else {
        return;
    };
    let job = job_dir(&env);
    let model = ScriptedModel::start(script(&job, ["gate", "gate"]));
    let mut run = run_until_both_tasks_held(&env, &model, &job);
    let bobs = task_states(&env)
        .into_iter()
        .find(|(_, _, owner)| owner.as_deref() == Some("bob"))
        .map(|(id, _, _)| format!("task-{id}"))
        .expect("bob holds a task");
    // The lead goes first, so nobody sees alice die; her pane stays, dead, to show how.
    kill9(&env, "team-lead");
    kill9(&env, "alice");
    run.wait(LONG).expect("swarm run did not end with its lead");
    assert!(wait_until(LONG, || teammate_processes(&env, "alice") == 0));

    let mut resume = start_resume(&env, &job, &["t"]);
    let log = env.root.join("teams/t/logs/team-lead.log");
    assert!(
        wait_until(LONG, || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("resume: alice:")),
        "the lead was not restarted\n{}",
        read(&env, "resume.err")
    );
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        said.contains("resume: alice: respawned"),
        "alice was not restarted:\n{said}"
    );
    assert_eq!(teammate_processes(&env, "alice"), 1);
    std::fs::write(job.join("gate"), "").unwrap();
    let status = resume.wait(LONG).expect("swarm resume did not finish");
    assert!(
        status.success(),
        "{}\n{}",
        read(&env, "resume.out"),
        read(&env, "resume.err")
    );
    assert!(
        task_states(&env)
            .iter()
            .all(|(_, s, _)| *s == Status::Completed),
        "{:?}",
        task_states(&env)
    );
    // bob's job once; alice's may be done twice: the SIGKILL orphaned the shell of her
    // Bash call, which still finishes it when the gate opens (a ladder stop kills the
    // whole session; a bare kill -9 does not).
    let done = effects(&job);
    assert_eq!(done.iter().filter(|e| **e == bobs).count(), 1, "{done:?}");
    assert!(
        done.iter().any(|e| *e != bobs),
        "alice's job was never done: {done:?}"
    );
}

fn a_dead_tmux_server_is_resumed_with_every_unfinished_teammate(backend: Backend) {
    let Some(env) = TestEnv::on(backend) else {
        return;
    };
    let job = job_dir(&env);
    // Job 2 goes through at once (its gate is there); job 1 waits for `gate1`.
    std::fs::write(job.join("open"), "").unwrap();
    let model = ScriptedModel::start(script(&job, ["gate1", "open"]));
    let mut run = start_run(&env, &model, &job);
    let held = |env: &TestEnv| {
        let t = task_states(env);
        t.len() == 2
            && t[0].1 == Status::InProgress
            && t[1].1 == Status::Completed
            && effects(&job) == ["task-2"]
    };
    assert!(
        wait_until(LONG, || held(&env)),
        "the team never reached the point to stop at: {:?}\n{}",
        task_states(&env),
        read(&env, "run.err")
    );
    env.assert_on_its_backend("t");
    let holder = task_states(&env)[0].2.clone().unwrap();
    let _ = env.tmux_cmd().arg("kill-server").status();
    run.wait(LONG)
        .expect("swarm run did not end with its tmux server");
    assert!(
        wait_until(LONG, || teammate_processes(&env, "alice")
            + teammate_processes(&env, "bob")
            == 0),
        "teammates outlived their tmux server"
    );
    // Mail that arrives while nobody runs is read once, by the resumed lead.
    env.run(&[
        "--team",
        "t",
        "send",
        "team-lead",
        "note-7731 from the user",
    ])
    .success();
    // `swarm run` here says there is a team to resume.
    let out = run_timeout(
        &mut env.swarm(&[
            "run",
            "another goal",
            "--team",
            "t",
            "--no-attach",
            "--provider",
            "scripted",
            "--base-url",
            &model.url(),
            "--cwd",
            &job.display().to_string(),
        ]),
        Duration::from_secs(60),
    )
    .failure(4);
    assert!(out.stderr.contains("swarm resume t"), "{}", out.stderr);

    let mut resume = start_resume(&env, &job, &[]);
    assert!(
        wait_until(LONG, || agent_requests(&model, &holder)
            .iter()
            .any(|b| latest_user_text(b).contains("You were resumed"))),
        "{holder} was not resumed on its task\n{}",
        read(&env, "resume.err")
    );
    std::fs::write(job.join("gate1"), "").unwrap();
    let status = resume.wait(LONG).expect("swarm resume did not finish");
    let out = read(&env, "resume.out");
    assert!(
        status.success(),
        "{out}\n{}\nlead log:\n{}",
        read(&env, "resume.err"),
        lead_log(&env)
    );
    assert!(out.contains("Result: done"), "{out}");
    assert_eq!(
        effects(&job),
        ["task-1", "task-2"],
        "a job was lost or done twice"
    );
    // The task stayed with its owner, who finished it.
    let tasks = task_states(&env);
    assert_eq!(tasks[0].2.as_deref(), Some(holder.as_str()), "{tasks:?}");
    let noted = agent_requests(&model, "team-lead")
        .iter()
        .filter(|b| latest_user_text(b).contains("note-7731"))
        .count();
    assert_eq!(noted, 1, "the note was not delivered exactly once");
    // The resumed agents remember their earlier conversation.
    let first = first_resumed_conversation(&model, &holder);
    assert!(first.contains("You have claimed task #1"), "{first}");
    assert!(first.contains("\"name\":\"Bash\""), "{first}");
    let first = first_resumed_conversation(&model, "team-lead");
    assert!(first.contains("Goal:\\nDo the two jobs."), "{first}");
    // The window the resume opened on the new server is closed with the run.
    assert_eq!(all_panes(&env), Vec::<String>::new(), "panes left behind");
}

fn resume_refuses_a_running_team_and_an_unknown_one(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &[]) else {
        return;
    };
    let out = env.run(&["resume", "nope"]).failure(3);
    assert!(out.stderr.contains("no team 'nope'"), "{}", out.stderr);
    let out = env.run(&["resume", "t"]).failure(4);
    assert!(out.stderr.contains("nothing to resume"), "{}", out.stderr);
    let _lock = env.store("t").agents().acquire_lead().unwrap();
    let out = env.run(&["resume", "t"]).failure(4);
    assert!(
        out.stderr.contains("is running") && out.stderr.contains("swarm attach t"),
        "{}",
        out.stderr
    );
    // Without a name, in a directory no unfinished team worked in.
    let out = env.run(&["resume"]).failure(3);
    assert!(out.stderr.contains("no unfinished team"), "{}", out.stderr);
}

/// The lead runs nothing it did not write (issue 34 item 2): a launch record changed by
/// anyone without the team's lead key (a host's role writing the row, a hand edit) is
/// refused by `swarm resume` in one line, exit 1, and by a resumed lead for a teammate,
/// and the command it names never runs.
fn a_launch_record_the_lead_did_not_sign_is_never_run(backend: Backend) {
    let Some(env) = TestEnv::with_team_on(backend, "t", &[]) else {
        return;
    };
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text("OK.")));
    let mut spawn = env.swarm(&["--team", "t", "spawn", "bob"]);
    spawn
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url());
    crate::harness::run(&mut spawn).success();
    let bob = swarm_util::names::AgentName::new("bob").unwrap();
    assert!(
        wait_until(LONG, || env.store("t").agents().read_state(&bob).is_some()
            && lead_pid(&env).is_some()),
        "bob or the lead never started"
    );
    let pids = [kill9(&env, "bob"), kill9(&env, "team-lead")];
    // Gone, not only signalled: a resume while the lead still dies finds it running. The
    // lead lock is the sign: a child the lead forked as it was killed holds it until that
    // child's exec closes it.
    assert!(
        wait_until(LONG, || !pids
            .iter()
            .any(|p| swarm_util::process::is_alive(*p))
            && !env.store("t").agents().lead_running()),
        "bob or the lead outlived SIGKILL"
    );
    let marker = env.dir.path().join("ran-by-the-lead");
    let store = env.store("t");
    let records = store.launches();
    let forge = |agent: &str| {
        let mut record = records.read_launch(agent).unwrap().unwrap();
        let original = record.clone();
        record.argv = vec![
            "sh".into(),
            "-c".into(),
            format!("id > {}", marker.display()),
        ];
        records.save_launch(agent, &record).unwrap();
        original
    };

    // The lead's own record, forged: resume refuses it.
    let lead_record = forge("team-lead");
    let out = env.run(&["resume", "t", "--no-attach"]).failure(1);
    assert!(
        out.stderr.contains("not signed by the team's lead key")
            && out.stderr.trim().lines().count() == 1,
        "{}",
        out.stderr
    );

    // The lead's put back, bob's forged: the lead resumes, and leaves bob stopped.
    records.save_launch("team-lead", &lead_record).unwrap();
    forge("bob");
    let mut resume = start_resume(&env, env.dir.path(), &["t"]);
    let log = env.root.join("teams/t/logs/team-lead.log");
    assert!(
        wait_until(LONG, || std::fs::read_to_string(&log)
            .is_ok_and(|l| l.contains("resume: bob: not restarted")
                && l.contains("not signed by the team's lead key"))),
        "the resumed lead said nothing of bob's record:\n{}\n{}",
        lead_log(&env),
        read(&env, "resume.err")
    );
    assert!(!marker.exists(), "the lead's machine ran a forged record");
    assert_eq!(teammate_processes(&env, "bob"), 0);
    drop(resume.0.take().map(|mut c| c.kill()));
}

on_every_backend!(
    a_launch_record_the_lead_did_not_sign_is_never_run,
    a_killed_lead_is_resumed_and_adopts_its_living_teammates,
    a_teammate_that_died_with_its_lead_is_restarted_beside_its_dead_pane,
    a_dead_tmux_server_is_resumed_with_every_unfinished_teammate,
    resume_refuses_a_running_team_and_an_unknown_one,
);
