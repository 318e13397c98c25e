//! A big team on one machine: what one agent costs must not grow with the team. An idle
//! teammate is woken by its own mail only; several teammates are spawned at once.

use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use swarm_model_server::{Reply, Rule, Script};

use swarm_roles::teammate::inbox::Inbox;
use swarm_util::names::AgentName;
use swarm_util::watcher::DirWatcher;

use crate::harness::{Guarded, ScriptedModel, TestEnv, wait_until};
use crate::team_tmux::{idle_model, member, panes, spawn, status};

const T: Duration = Duration::from_secs(30);

fn wait_all(children: Vec<Child>) {
    for mut c in children {
        let out = c.wait().unwrap();
        assert!(out.success(), "a load process failed: {out}");
    }
}

#[test]
fn an_inbox_is_woken_by_its_own_mail_only_however_busy_the_team() {
    let _heavy = crate::harness::heavy();
    let peers: Vec<String> = (0..8).map(|i| format!("peer{i}")).collect();
    let mut members: Vec<&str> = peers.iter().map(String::as_str).collect();
    members.push("me");
    let env = TestEnv::with_team("t", &members);
    let (root, team) = (env.teams(), env.team_name("t"));
    let me = AgentName::new("me").unwrap();
    let inbox = Inbox::open(&root.open(&team).unwrap(), &me);
    // What a watch on the inbox directory (how teammates used to wait) hears meanwhile:
    // proof that the load below is the kind that used to wake every teammate.
    let dir_watch = DirWatcher::file(&root.root().inbox_path(&team, &me), || {});

    // The rest of the team at work: every peer is sent mail by real processes and reads
    // and acknowledges it (inbox rewrites, lock directories, sidecars, delivered logs).
    let r = env.root.display().to_string();
    let mut load = Vec::new();
    for (i, peer) in peers.iter().enumerate() {
        let from = &peers[(i + 1) % peers.len()];
        load.push(
            env.stress(&["send", &r, "t", from, peer, "20"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let seen = env.dir.path().join(format!("{peer}.drained"));
        load.push(
            env.stress(&["drain", &r, "t", peer, "20", &seen.display().to_string()])
                .spawn()
                .unwrap(),
        );
    }
    wait_all(load);
    assert!(
        wait_until(T, || dir_watch.events() > 0),
        "the peers' mail never showed in the inbox directory"
    );

    // Then its own: the bell wakes it at once (no rescan runs here), and it is the first
    // and only wake-up it had.
    env.run(&["--team", "t", "send", "me", "for me", "--from", "peer0"])
        .success();
    assert!(
        wait_until(T, || inbox.wakeups() >= 1),
        "its own mail did not wake it"
    );
    assert_eq!(
        inbox.wakeups(),
        1,
        "woken by other agents' mail ({} wake-ups of a directory watch meanwhile)",
        dir_watch.events()
    );
    let mail = root.open(&team).unwrap().mail().read_unread(&me).unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].envelope.text, "for me");
}

#[test]
fn several_names_spawn_together_each_with_its_own_fate() {
    let _heavy = crate::harness::heavy();
    let env = TestEnv::with_team("t", &["taken"]);
    let model = idle_model();
    let out = spawn(
        &env,
        &model,
        "a",
        &["b", "Taken", "c", "--prompt", "stand by"],
    )
    .failure(4);
    assert!(
        out.stderr
            .contains("failed to spawn Taken: team 't' already has a member named 'taken'"),
        "{}",
        out.stderr
    );
    for n in ["a", "b", "c"] {
        assert!(
            out.stdout.contains(&format!("spawned {n} in pane %")),
            "{}",
            out.stdout
        );
    }
    assert!(
        wait_until(T, || {
            let s = status(&env);
            ["a", "b", "c"]
                .iter()
                .all(|n| member(&s, n).is_some_and(|m| m["alive"] == true))
        }),
        "not all started: {}",
        status(&env)
    );
    // One pane each, tagged; none for the refused name.
    let mut agents: Vec<String> = panes(&env).into_iter().map(|(_, a, _)| a).collect();
    agents.sort();
    assert_eq!(agents, ["a", "b", "c", "team-lead"]);
    // Colours as spawning them one after another would have given.
    let roster: Value =
        serde_json::from_slice(&std::fs::read(env.root.join("teams/t/config.json")).unwrap())
            .unwrap();
    let colour = |n: &str| {
        roster["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .map(|m| m["color"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let palette = swarm_store::roster::PALETTE;
    assert_eq!(
        [colour("a"), colour("b"), colour("c")],
        [palette[2], palette[3], palette[4]]
    );
    // Each had its first instructions (acknowledged once its model saw them).
    for n in ["a", "b", "c"] {
        let delivered = env
            .root
            .join(format!("teams/t/inboxes/{n}.delivered.jsonl"));
        assert!(
            wait_until(T, || std::fs::read_to_string(&delivered)
                .is_ok_and(|t| t.contains("stand by"))),
            "{n} never read its prompt"
        );
    }
    // Several at once as JSON: one object each.
    let out = spawn(&env, &model, "d", &["e", "--json"]).success();
    let spawned: Value = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = spawned
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["d", "e"]);
    // A dry run shows one spawn.
    let out = spawn(&env, &model, "f", &["g", "--dry-run"]).failure(2);
    assert!(
        out.stderr.contains("--dry-run shows one spawn"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_leads_agent_calls_of_one_turn_spawn_together_up_to_the_teams_limit() {
    let env = TestEnv::new();
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mate = |name: &str| json!({"name": name, "description": "worker", "prompt": format!("You are {name}.")});
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("lead spawns three")
                    .agent("team-lead")
                    .user_contains("Goal:")
                    .no_tool_result(true)
                    .times(1)
                    .reply(
                        Reply::tool("Agent", mate("alice"))
                            .tool_call("Agent", mate("bob"))
                            .tool_call("Agent", mate("carol")),
                    ),
            )
            .default_reply(Reply::text("Waiting.")),
    );
    let mut cmd = env.swarm(&[
        "run",
        "Spawn three.",
        "--team",
        "t",
        "--no-attach",
        "--teammates",
        "2",
        "--provider",
        "scripted",
        "--base-url",
    ]);
    cmd.arg(model.url())
        .args(["--cwd", &work.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _run = Guarded(Some(cmd.spawn().unwrap()));
    // The lead's next request carries the three results, in the order of the calls.
    let results = || -> Option<Vec<String>> {
        model.requests().into_iter().find_map(|r| {
            let last = r.body["messages"].as_array()?.last()?.clone();
            let results: Vec<String> = last["content"]
                .as_array()?
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| b["content"].as_str().unwrap_or_default().to_owned())
                .collect();
            (r.agent() == Some("team-lead") && results.len() == 3).then_some(results)
        })
    };
    assert!(
        wait_until(T, || results().is_some()),
        "no results came back"
    );
    let results = results().unwrap();
    assert!(results[0].contains("name: alice"), "{results:?}");
    assert!(results[1].contains("name: bob"), "{results:?}");
    assert!(
        results[2].contains("the team already has 2 teammate(s), the most this run allows"),
        "{results:?}"
    );
    assert!(
        wait_until(T, || {
            let mut agents: Vec<String> = panes(&env).into_iter().map(|(_, a, _)| a).collect();
            agents.sort();
            agents == ["alice", "bob", "team-lead"]
        }),
        "{:?}",
        panes(&env)
    );
}
