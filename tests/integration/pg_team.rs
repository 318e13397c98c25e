//! A team on PostgreSQL, through the CLI: `swarm team create --store URL` (and
//! `SWARM_STORE_URL`) makes the team in the database and leaves only its pointer under the
//! root; every later command (and every teammate, which gets only `--root`) finds the team
//! there; `swarm demo --store URL` runs the demo job on it. Against a real server, one per
//! test binary and a database per test (`swarm_store_pg::testing`); where PostgreSQL is
//! missing the tests say SKIPPED, and fail under `CI=true`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use swarm_model_server::{Reply, Rule, Script};

use crate::harness::{Guarded, ScriptedModel, TestEnv, run, run_timeout, wait_until};
use swarm_store::Root;
use swarm_store::seam::Backend;
use swarm_store_pg::PgStore;
use swarm_util::names::{AgentName, TeamName};

/// `team` in the database at `url`, read there directly (no pointer, no files).
fn in_database(url: &str, env: &TestEnv, team: &str) -> PgStore {
    let scratch = Root::new(env.dir.path().join("elsewhere"));
    let no_env = swarm_util::environment::Environment::default();
    PgStore::connect(url, &no_env, &scratch, &TeamName::new(team).unwrap()).unwrap()
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_team_made_on_postgres_is_found_by_every_later_command() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let env = TestEnv::new();
    let made = env
        .run(&["team", "create", "pgt", "--store", &url])
        .success();
    assert!(
        made.stdout.contains("created team pgt in"),
        "{}",
        made.stdout
    );
    env.run(&["--team", "pgt", "team", "add", "bob"]).success();
    env.run(&["--team", "pgt", "send", "bob", "please write the docs"])
        .success();
    env.run(&["--team", "pgt", "task", "add", "Write the docs"])
        .success();
    env.run(&["--team", "pgt", "task", "claim", "1", "--as", "bob"])
        .success();

    let status: Value = serde_json::from_str(
        &env.run(&["--team", "pgt", "status", "--json"])
            .success()
            .stdout,
    )
    .unwrap();
    assert_eq!(status["members"][1]["name"], "bob", "{status}");
    assert_eq!(status["tasks"]["inProgress"], 1, "{status}");

    // The rows are in the database, read there without the root's files.
    let db = in_database(&url, &env, "pgt");
    let roster = db.roster().load().unwrap();
    assert!(roster.member("bob").is_some(), "{roster:?}");
    let unread = db
        .mail()
        .read_unread(&AgentName::new("bob").unwrap())
        .unwrap();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0].envelope.text, "please write the docs");
    // A person speaks as the lead: signed with the team's lead key, as on files.
    assert!(
        unread[0].envelope.extra.contains_key("lead_sig"),
        "{:?}",
        unread[0]
    );
    let tasks = db.tasks().list().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].owner.as_deref(), Some("bob"));
    // And nothing of the team's shared state is in files: only its pointer, with the URL,
    // and this host's own (the lead's signing key, which a person's CLI signs with).
    let team_files = files_under(&env.root.join("teams").join("pgt"));
    assert_eq!(team_files, ["lead.key", "store.json"]);
    assert!(!env.root.join("tasks").join("pgt").exists());
    let pointer: Value =
        serde_json::from_slice(&std::fs::read(env.root.join("teams/pgt/store.json")).unwrap())
            .unwrap();
    assert_eq!(pointer["url"], url.as_str());

    // Listed with the file teams, and deleted from the database with its pointer.
    env.run(&["team", "create", "files"]).success();
    let list = env.run(&["team", "list"]).success().stdout;
    assert!(list.contains("pgt") && list.contains("files"), "{list}");
    env.run(&["team", "delete", "pgt", "--force"]).success();
    assert!(!env.root.join("teams").join("pgt").exists());
    assert!(
        db.roster().load().is_err(),
        "the team is still in the database"
    );
}

#[test]
fn a_store_url_with_a_password_is_refused_before_anything_is_made() {
    let env = TestEnv::new();
    let out = env
        .run(&[
            "team",
            "create",
            "secret",
            "--store",
            "postgres://bob:s3cret@localhost/swarm",
        ])
        .failure(2);
    assert!(
        out.stderr.contains("~/.pgpass or PGPASSWORD"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(!env.root.join("teams").join("secret").exists());
    // The same for a run and the demo, and from the environment.
    for args in [&["run", "build it"][..], &["demo", "--no-attach"]] {
        let out = run(env
            .swarm(args)
            .env("SWARM_STORE_URL", "postgres://bob:s3cret@localhost/swarm"))
        .failure(2);
        assert!(
            out.stderr.contains("~/.pgpass or PGPASSWORD"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    }
    assert!(!env.root.join("teams").exists());
}

#[test]
fn an_unreachable_server_is_one_line_and_exit_11_naming_it() {
    let env = TestEnv::new();
    let gone = env.dir.path().join("no-server");
    std::fs::create_dir_all(&gone).unwrap();
    let url = format!("host={} port=1 user=postgres dbname=x", gone.display());
    let out = env
        .run(&["team", "create", "away", "--store", &url])
        .failure(11);
    assert!(
        out.stderr
            .contains("failed to connect to the team's database at"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&gone.display().to_string()),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(!env.root.join("teams").join("away").exists());

    // A team whose server went away: every command says so, before it acts.
    let dir = env.root.join("teams").join("away");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("store.json"), format!("{{\"url\": \"{url}\"}}")).unwrap();
    for args in [
        &["--team", "away", "status"][..],
        &["--team", "away", "send", "team-lead", "hi"],
    ] {
        let out = env.run(args).failure(11);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("failed to connect to the team's database at"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn the_demo_job_completes_on_a_postgres_team() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    // The URL from the environment, as a person would set it once.
    let out = run_timeout(
        env.swarm(&[
            "demo",
            "--no-attach",
            "--keep",
            "--dir",
            &job.display().to_string(),
        ])
        .env("SWARM_STORE_URL", &url),
        Duration::from_secs(180),
    )
    .success();
    assert!(
        out.stdout.contains("Result: done: every task is completed"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("the job's check passed"),
        "{}",
        out.stdout
    );
    // The team's tasks were on the server, all completed there, none in files.
    let teams: Vec<String> = std::fs::read_dir(env.root.join("teams"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let [team] = teams.as_slice() else {
        panic!("one team expected: {teams:?}");
    };
    assert!(
        !env.root
            .join("teams")
            .join(team)
            .join("config.json")
            .exists()
    );
    assert!(!env.root.join("tasks").join(team).exists());
    let tasks = in_database(&url, &env, team).tasks().list().unwrap();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    assert!(
        tasks
            .iter()
            .all(|t| t.status == swarm_store::tasks::Status::Completed),
        "{tasks:?}"
    );
}

/// `swarm run --store URL`: the team is made in the database, and its lead (started in
/// tmux with only `--root`) finds it there through the pointer: its task and its state are
/// rows, and no task file is written.
#[test]
fn a_run_with_store_makes_its_team_in_the_database_and_its_lead_works_there() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let env = TestEnv::new();
    let model = ScriptedModel::lead_with_one_task("build");
    let mut cmd = env.swarm(&["run", "build it", "--team", "t", "--no-attach"]);
    cmd.args(["--provider", "scripted", "--base-url", &model.url()])
        .args(["--store", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut run = Guarded(Some(cmd.spawn().unwrap()));
    let db = || in_database(&url, &env, "t");
    assert!(
        wait_until(Duration::from_secs(30), || db()
            .tasks()
            .list()
            .is_ok_and(|t| t.len() == 1)),
        "the lead made no task in the database"
    );
    assert!(db().agents().read_state(&AgentName::lead()).is_some());
    assert!(!env.root.join("tasks").join("t").exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.child().id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert!(
        run.wait(Duration::from_secs(60)).is_some(),
        "the run did not stop"
    );
    assert!(wait_until(Duration::from_secs(30), || db()
        .agents()
        .read_state(&AgentName::lead())
        .is_some_and(|s| s.exit.is_some())));
}

#[test]
fn store_migrate_brings_a_database_to_this_swarms_schema_and_says_from_where() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let env = TestEnv::new();
    let latest = swarm_store_pg::migrate::LATEST;
    let first = env.run(&["--json", "store", "migrate", &url]).success();
    let said: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(
        (said["from"].as_i64(), said["to"].as_i64()),
        (Some(0), Some(i64::from(latest))),
        "{said}"
    );
    let again = env.run(&["store", "migrate", &url]).success();
    assert!(
        again
            .stdout
            .contains(&format!("is at schema version {latest}, the newest")),
        "{}",
        again.stdout
    );
    // The tables are there: a team can be made in it without another migration.
    env.run(&["team", "create", "after", "--store", &url])
        .success();
    let bad = env
        .run(&["store", "migrate", "postgres://a@h:notaport/x"])
        .failure(2);
    assert_eq!(bad.stderr.trim().lines().count(), 1, "{}", bad.stderr);
}

/// A PostgreSQL team's server crashes while its teammate waits for work: the teammate
/// says so in its pane, starts no model call, and carries on when the server is back (it
/// hears the next message and answers it).
#[test]
fn a_teammate_waits_out_its_database_and_carries_on_when_it_returns() {
    let Some(server) = swarm_store_pg::testing::Private::start() else {
        return;
    };
    let url = server.url("postgres");
    let env = TestEnv::new();
    let model = ScriptedModel::start(
        Script::new()
            .rule(
                Rule::new("pong")
                    .agent("bob")
                    .user_contains("ping")
                    .no_tool_result(true)
                    .reply(Reply::tool(
                        "SendMessage",
                        serde_json::json!({"to": "team-lead", "summary": "pong", "message": "pong"}),
                    )),
            )
            .rule(Rule::new("rest").agent("bob").reply(Reply::text("Done."))),
    );
    env.run(&["team", "create", "t", "--store", &url]).success();
    run(env
        .swarm(&["--team", "t", "spawn", "bob", "--prompt", "wait for mail"])
        .env("SWARM_PROVIDER", "scripted")
        .env("SWARM_BASE_URL", model.url()))
    .success();
    let db = || in_database(&url, &env, "t");
    let bob = AgentName::new("bob").unwrap();
    // Idle after its first turn (its idle notification sent), not only registered: a turn
    // under way when the server goes finishes its model call first.
    let idle = || {
        let told = db().mail().read_all(&AgentName::lead()).is_ok_and(|mail| {
            mail.iter().any(|d| {
                d.envelope.from == "bob"
                    && matches!(
                        d.envelope.protocol(),
                        Some(swarm_store::protocol::Protocol::IdleNotification(_))
                    )
            })
        });
        told && db()
            .agents()
            .read_state(&bob)
            .is_some_and(|s| s.activity == swarm_store::state::Activity::Idle)
    };
    // Every pane's text (bob's is the only one: the team has no lead process).
    let pane = || {
        let out = env
            .tmux_cmd()
            .args(["list-panes", "-a", "-F", "#{pane_id}"])
            .output();
        let ids = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        ids.lines()
            .map(|id| {
                let out = env
                    .tmux_cmd()
                    .args(["capture-pane", "-p", "-t", id])
                    .output();
                out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default()
            })
            .collect::<String>()
    };
    assert!(
        wait_until(Duration::from_secs(30), idle),
        "bob never went idle:\n{}",
        pane()
    );

    server.crash();
    // Its calls wait out a short outage (`OUTAGE_WAIT`, 10 s) before the loop says so.
    let said = wait_until(Duration::from_secs(60), || {
        pane().contains("waiting for the team's database")
    });
    if !said {
        env.print_evidence();
    }
    assert!(said, "bob's pane does not say it waits:\n{}", pane());
    // `swarm status` says so too: in one line, naming the server, exit 11.
    let away = run_timeout(
        &mut env.swarm(&["--team", "t", "status"]),
        Duration::from_secs(60),
    )
    .failure(11);
    assert!(
        away.stderr.contains("team's database") && away.stderr.trim().lines().count() == 1,
        "{}",
        away.stderr
    );
    let asked = model.requests().len();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        model.requests().len(),
        asked,
        "a model call while the database was away"
    );
    server.run();

    env.run(&["--team", "t", "send", "bob", "ping"]).success();
    assert!(
        wait_until(Duration::from_secs(30), || db()
            .mail()
            .read_all(&AgentName::lead())
            .is_ok_and(|m| m.iter().any(|d| d.envelope.text == "pong"))),
        "bob did not carry on after the database came back:\n{}",
        pane()
    );
    assert!(
        db().agents()
            .read_state(&bob)
            .is_some_and(|s| s.process_alive())
    );
}

/// A teammate on a PostgreSQL team is paused (as a suspended VM would be) while it works
/// on a task: its heartbeat stops, and once the timeout has passed it is declared dead with
/// its pid still running; its task goes back, the lead is told once, and another teammate
/// takes and finishes the task. Resumed, the paused one finds itself fenced: it cannot
/// complete the task over its successor, and it exits with code 4.
#[test]
fn a_teammate_whose_heartbeat_stops_is_declared_dead_and_cannot_write_when_it_returns() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let Some(env) = crate::harness::TestEnv::with_team_on(
        crate::harness::Backend::Postgres,
        "t",
        &["alice", "bob"],
    ) else {
        return;
    };
    let model = ScriptedModel::start(ScriptedModel::slow_alice_quick_bob(2_000));
    env.run(&["--team", "t", "task", "add", "build the thing"])
        .success();
    let store = env.store("t");
    let (mut alice, _) = env.teammate("t", "alice", &model.url(), &[]);
    let asked = |who: &str| {
        model
            .requests()
            .iter()
            .filter(|r| r.agent() == Some(who))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(30), || asked("alice") > 0),
        "alice never asked her model"
    );
    let state = store
        .agents()
        .read_state(&AgentName::new("alice").unwrap())
        .unwrap();
    assert!(state.token.is_some() && state.host.is_some(), "{state:?}");
    assert_eq!(state.current_task.as_deref(), Some("1"));
    let paused = Pid::from_raw(state.pid);
    kill(paused, Signal::SIGSTOP).unwrap();
    let (mut bob, _) = env.teammate("t", "bob", &model.url(), &[]);

    let mut dead = Value::Null;
    let declared = wait_until(Duration::from_secs(30), || {
        dead = crate::harness::member_json(&env.status_json("t", 3000), "alice").clone();
        dead["state"] == "dead"
    });
    if !declared {
        env.print_evidence();
    }
    assert!(declared, "alice was never declared dead: {dead}");
    assert!(
        dead["detail"]
            .as_str()
            .unwrap()
            .contains("heartbeat stopped"),
        "{dead}"
    );
    assert!(swarm_util::process::is_alive(state.pid), "paused, not gone");
    let done = wait_until(Duration::from_secs(30), || {
        store.tasks().get("1").is_ok_and(|t| {
            t.status == swarm_store::tasks::Status::Completed && t.owner.as_deref() == Some("bob")
        })
    });
    if !done {
        env.print_evidence();
    }
    assert!(
        done,
        "bob never finished the task alice held: {:?}",
        store.tasks().get("1")
    );

    kill(paused, Signal::SIGCONT).unwrap();
    let code = alice.wait(Duration::from_secs(30));
    if code.and_then(|c| c.code()) != Some(4) {
        env.print_evidence();
    }
    assert_eq!(code.and_then(|c| c.code()), Some(4), "alice's exit");
    let task = store.tasks().get("1").unwrap();
    assert_eq!(task.owner.as_deref(), Some("bob"), "{task:?}");
    assert_eq!(task.status, swarm_store::tasks::Status::Completed);
    let log = std::fs::read_to_string(env.root.join("teams/t/logs/alice.log")).unwrap();
    assert!(log.contains("declared dead"), "{log}");

    // Told once, however many looks there were.
    env.status_json("t", 3000);
    let told: Vec<_> = env
        .lead_inbox("t")
        .into_iter()
        .filter(|e| e.text.contains("teammate_terminated") && e.text.contains("alice"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].text.contains("heartbeat stopped"),
        "{}",
        told[0].text
    );
    let stopped = store
        .agents()
        .read_state(&AgentName::new("alice").unwrap())
        .unwrap();
    assert_eq!(
        stopped.exit.as_ref().map(|e| e.released_tasks.clone()),
        Some(vec!["1".to_owned()])
    );
    drop(bob.child().kill());
}

/// The demo job on a PostgreSQL team whose server crashes (an immediate shutdown, crash
/// recovery at its next start) once the teammates work on their tasks, and comes back a
/// moment later: every agent reconnects and carries on, the run finishes with every task
/// completed and the job's check passing, and nobody was declared dead for the silence.
#[test]
fn the_demo_job_finishes_through_a_restart_of_its_database() {
    let Some(server) = swarm_store_pg::testing::Private::start() else {
        return;
    };
    let _heavy = crate::harness::heavy();
    let url = server.url("postgres");
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    let mut demo = env.swarm(&[
        "demo",
        "--no-attach",
        "--keep",
        "--store",
        &url,
        "--dir",
        &job.display().to_string(),
    ]);
    let out_path = env.dir.path().join("demo.out");
    demo.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("demo.err")).unwrap());
    let mut demo = crate::harness::Guarded(Some(demo.spawn().unwrap()));
    let team = || {
        std::fs::read_dir(env.root.join("teams"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .next()
    };
    let working = wait_until(Duration::from_secs(120), || {
        team().is_some_and(|t| {
            in_database(&url, &env, &t)
                .tasks()
                .list()
                .is_ok_and(|tasks| {
                    tasks
                        .iter()
                        .any(|t| t.status == swarm_store::tasks::Status::InProgress)
                })
        })
    });
    if !working {
        env.print_evidence();
    }
    assert!(working, "no teammate took a task");
    server.crash();
    std::thread::sleep(Duration::from_secs(1));
    server.run();

    let code = demo.wait(Duration::from_secs(180));
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    if code.and_then(|c| c.code()) != Some(0) {
        env.print_evidence();
    }
    assert_eq!(code.and_then(|c| c.code()), Some(0), "{out}");
    assert!(
        out.contains("Result: done: every task is completed"),
        "{out}"
    );
    assert!(out.contains("the job's check passed"), "{out}");
    let team = team().unwrap();
    let db = in_database(&url, &env, &team);
    let tasks = db.tasks().list().unwrap();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    assert!(
        tasks
            .iter()
            .all(|t| t.status == swarm_store::tasks::Status::Completed),
        "{tasks:?}"
    );
    let lead = AgentName::lead();
    let mail: Vec<String> = db
        .mail()
        .read_all(&lead)
        .unwrap()
        .into_iter()
        .map(|d| d.envelope.text)
        .chain(
            db.mail()
                .read_delivered(&lead)
                .unwrap()
                .into_iter()
                .map(|e| e.text),
        )
        .collect();
    let deaths: Vec<&String> = mail
        .iter()
        .filter(|t| t.contains("teammate_terminated") && t.contains("terminated ("))
        .collect();
    assert!(
        deaths.is_empty(),
        "declared dead for the outage: {deaths:?}"
    );
}
