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
use swarm_store_pg::connect::Retry;
use swarm_store_pg::testing::Private;
use swarm_store_pg::{Database, PgStore};
use swarm_util::environment::Environment;
use swarm_util::names::{AgentName, TeamName};

/// The heartbeat timeout `swarm status` judges by in these tests: the default a person
/// gets (10 s), which a live member meets on a loaded 2-core machine (it beats every
/// second); a shorter one could declare a live teammate dead there. A death is still seen,
/// only later.
pub(crate) const BEAT_TIMEOUT_MS: u64 = swarm_store::liveness::DEFAULT_TIMEOUT.as_millis() as u64;

/// `team` in the database at `url`, read there directly (no pointer, no files).
fn in_database(url: &str, env: &TestEnv, team: &str) -> PgStore {
    let scratch = Root::new(env.dir.path().join("elsewhere"));
    PgStore::connect(url, &password(), &scratch, &TeamName::new(team).unwrap()).unwrap()
}

/// The environment this test process reaches a team's database with: the test server's
/// password, as its children get it.
fn password() -> Environment {
    Environment::from_pairs([("PGPASSWORD", swarm_store_pg::testing::TEAM_PASSWORD)])
}

/// Runs `sql` on the database at `url` (as the URL's user: the database's owner, or a
/// private server's superuser), returning the first column of its first row as text, if
/// it returns one.
fn sql(url: &str, sql: &str) -> Option<String> {
    let db = Database::open(url, &password()).unwrap();
    db.run(Retry::Once, "run the test's statement", |c| {
        let rows = c.query(sql, &[])?;
        Ok(rows.first().map(|r| r.get::<_, String>(0)))
    })
    .unwrap()
}

/// `pg_ctl restart -m fast` of `server`, as pg_ctl does it: SIGINT to the postmaster (a
/// fast shutdown: new connections refused as "shutting down", sessions ended with
/// 57P01, a checkpoint), waited for, then a start, waited for until it takes connections.
/// The postmaster's pid is the first line of its `postmaster.pid`. Returns when it
/// stopped and when it started again.
fn restart_fast(server: &Private) -> (std::time::Instant, std::time::Instant) {
    use nix::sys::signal::{Signal, kill};
    let file = sql(
        &server.url("postgres"),
        "SELECT pg_read_file('postmaster.pid')",
    )
    .unwrap();
    let pid = nix::unistd::Pid::from_raw(file.lines().next().unwrap().trim().parse().unwrap());
    let down = std::time::Instant::now();
    kill(pid, Signal::SIGINT).unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || kill(pid, None).is_err()),
        "postgres did not stop within a minute of a fast shutdown"
    );
    server.run();
    (down, std::time::Instant::now())
}

/// Every tmux pane's text of this test's server.
fn panes(env: &TestEnv) -> String {
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
    // Every spelling the driver reads as a password, on every command that takes a URL:
    // refused in one line that shows none of it, before anything is made or sent.
    env.run(&["host", "add", "h1", "root@10.255.0.9", "--dir", "/srv/p"])
        .success();
    for url in [
        "postgres://bob@localhost/swarm?%70assword=s3cret",
        "postgres://bob@localhost/swarm?sslmode=require&PassWord=s3cret",
        "host=localhost user=bob password = s3cret dbname=swarm",
        "postgres://bob:s3cret@localhost/swarm?bogus=1",
    ] {
        for args in [
            &["team", "create", "secret", "--store", url][..],
            &["store", "check", url],
            &["store", "migrate", url],
            &["host", "check", "h1", "--store", url],
            &["team", "link", "secret", "--store", url],
        ] {
            let out = env.run(args).failure(2);
            assert!(
                out.stderr.contains("holds a password")
                    && !out.stderr.contains("s3cret")
                    && !out.stdout.contains("s3cret")
                    && out.stderr.trim().lines().count() == 1,
                "{args:?}:\n{}{}",
                out.stdout,
                out.stderr
            );
        }
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

    // A team whose server went away: every command says so, before it acts, once it has
    // waited `OUTAGE_WAIT` for it (the team's pointer says a server runs there: it may be
    // restarting), and says that it waited.
    let dir = env.root.join("teams").join("away");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("store.json"), format!("{{\"url\": \"{url}\"}}")).unwrap();
    let (status, send) = std::thread::scope(|s| {
        let status = s.spawn(|| env.run(&["--team", "away", "status"]));
        // With the store's debug log: each look at the server while waiting says so.
        let send = run(env
            .swarm(&["--team", "away", "send", "team-lead", "hi"])
            .env("SWARM_LOG", "swarm_store_pg=debug"));
        (status.join().unwrap(), send)
    });
    let status = status.failure(11);
    assert_eq!(status.stderr.trim().lines().count(), 1, "{}", status.stderr);
    let send = send.failure(11);
    for out in [&status, &send] {
        let last = out.stderr.trim().lines().last().unwrap_or_default();
        assert!(
            last.contains("failed to connect to the team's database at")
                && last.contains("did not come back within 10 s"),
            "{}",
            out.stderr
        );
    }
    assert!(
        send.stderr.contains("waiting for the database"),
        "{}",
        send.stderr
    );
}

/// Whether a command that failed (its stderr, with the store's debug log) waited for its
/// server before it said so.
fn waited(stderr: &str) -> bool {
    stderr.contains("waiting for the database") || stderr.contains("did not come back within")
}

/// What is not a restart is said at once, without waiting for the server (see
/// `an_unreachable_server_is_one_line_and_exit_11_naming_it` for a wait, seen the same
/// way): a server never reached at a URL a person gave (no team's pointer names it yet),
/// and a password the server refuses, even through the pointer of a team the server holds.
/// Whether a command waited is read from what it says with the store's debug log on (each
/// look while waiting is a line), not from a clock.
#[test]
fn a_wrong_port_or_password_is_said_at_once_without_waiting() {
    use swarm_store_pg::testing::PASSWORD_ROLE as ROLE;
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let env = TestEnv::new();
    let debug = |args: &[&str], password: &str| {
        run(env
            .swarm(args)
            .env("SWARM_LOG", "swarm_store_pg=debug")
            .env("PGPASSWORD", password))
    };

    // A wrong port: no server there, and no pointer yet.
    let port = url
        .split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let wrong_port = url.replace(&format!("port={port}"), "port=1");
    for args in [
        &["team", "create", "x", "--store", &wrong_port][..],
        &["store", "check", &wrong_port],
    ] {
        let out = debug(args, "").failure(11);
        assert!(!waited(&out.stderr), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("failed to connect to the team's database at"),
            "{}",
            out.stderr
        );
        let plain = run(&mut env.swarm(args)).failure(11);
        assert_eq!(plain.stderr.trim().lines().count(), 1, "{}", plain.stderr);
    }
    assert!(!env.root.join("teams").join("x").exists());

    // A role that must give its password, owning the database, and a team made with it.
    let secret = "pw-Restart-0815";
    let db = sql(&url, "SELECT current_database()").unwrap();
    sql(
        &url,
        &format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') \
             THEN CREATE ROLE {ROLE} LOGIN; END IF; END $$"
        ),
    );
    sql(&url, &format!("ALTER ROLE {ROLE} PASSWORD '{secret}'"));
    sql(&url, &format!("ALTER DATABASE {db} OWNER TO {ROLE}"));
    let as_role = url.replace("user=postgres", &format!("user={ROLE}"));
    debug(&["team", "create", "t", "--store", &as_role], secret).success();
    debug(&["--team", "t", "team", "add", "bob"], secret).success();
    // The server runs, and the team's pointer names it: a wrong password is still no
    // restart.
    let refused = debug(&["--team", "t", "send", "bob", "hi"], "wrong-Guess-77").failure(11);
    assert!(!waited(&refused.stderr), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("password authentication failed"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("wrong-Guess-77"),
        "{}",
        refused.stderr
    );
    debug(&["--team", "t", "send", "bob", "hi"], secret).success();
}

/// Many `swarm send`s, each a process of its own that opens the team through its pointer,
/// run while the team's server restarts fast (`pg_ctl restart -m fast`: new connections
/// refused as "shutting down", sessions ended, the socket gone, then "starting up"). Each
/// send waits for the server as a running agent does (`OUTAGE_WAIT`, 10 s), so none fails,
/// and each message is in the inbox once: none lost, none doubled.
///
/// The bound is 0 failures: the restart of this small, idle server takes about a second,
/// far less than the 10 s a send waits, so a failure is a regression (or a restart slower
/// than 10 s, which its message says: "did not come back within 10 s").
#[test]
fn sends_ride_out_a_fast_restart_of_their_teams_server() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::time::Instant;
    let Some(server) = Private::start() else {
        return;
    };
    let _heavy = crate::harness::heavy();
    let url = server.url("postgres");
    let env = TestEnv::new();
    env.run(&["team", "create", "t", "--store", &url]).success();
    env.run(&["--team", "t", "team", "add", "bob"]).success();
    /// Senders at once, and the most sends each makes (a bound, should the restart hang).
    const SENDERS: usize = 6;
    const MOST: usize = 200;
    struct Sent {
        text: String,
        ok: bool,
        said: String,
        start: Instant,
        end: Instant,
    }
    let restarted = AtomicBool::new(false);
    let acked = AtomicUsize::new(0);
    let ((down, up), sent) = std::thread::scope(|s| {
        let senders: Vec<_> = (0..SENDERS)
            .map(|w| {
                let (env, restarted, acked) = (&env, &restarted, &acked);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    // Each goes on for a few sends after the restart, so every one spans it.
                    let mut after = 0;
                    for i in 0..MOST {
                        if restarted.load(SeqCst) {
                            after += 1;
                            if after > 3 {
                                break;
                            }
                        }
                        let text = format!("s{w}-{i}");
                        let start = Instant::now();
                        let out = run(&mut env.swarm(&["--team", "t", "send", "bob", &text]));
                        let ok = out.status.success();
                        if ok {
                            acked.fetch_add(1, SeqCst);
                        }
                        mine.push(Sent {
                            text,
                            ok,
                            said: format!("{:?}: {}", out.status.code(), out.stderr.trim()),
                            start,
                            end: Instant::now(),
                        });
                    }
                    mine
                })
            })
            .collect();
        // Sends are flowing before the server goes.
        let flowing = wait_until(Duration::from_secs(60), || acked.load(SeqCst) >= SENDERS);
        let restart = flowing.then(|| restart_fast(&server));
        restarted.store(true, SeqCst);
        let sent: Vec<Sent> = senders
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        (
            restart.expect("no send went through before the restart"),
            sent,
        )
    });
    // The restart came mid-work: sends were under way while the server was away, and more
    // were made after it was back.
    let across = sent.iter().filter(|x| x.start < up && x.end > down).count();
    let later = sent.iter().filter(|x| x.start > up).count();
    assert!(across > 0 && later > 0, "across {across}, after {later}");
    let inbox: Vec<String> = in_database(&url, &env, "t")
        .mail()
        .read_all(&AgentName::new("bob").unwrap())
        .unwrap()
        .into_iter()
        .map(|d| d.envelope.text)
        .collect();
    let mut copies = std::collections::HashMap::new();
    for text in &inbox {
        *copies.entry(text.as_str()).or_insert(0) += 1;
    }
    let doubled: Vec<_> = copies.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "delivered twice: {doubled:?}");
    let lost: Vec<&String> = sent
        .iter()
        .filter(|x| x.ok && !copies.contains_key(x.text.as_str()))
        .map(|x| &x.text)
        .collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    let failed: Vec<&String> = sent.iter().filter(|x| !x.ok).map(|x| &x.said).collect();
    assert!(
        failed.is_empty(),
        "{} of {} sends failed across the restart: {failed:#?}",
        failed.len(),
        sent.len()
    );
}

#[test]
fn the_demo_job_completes_on_a_postgres_team() {
    let Some(url) = swarm_store_pg::testing::team_database() else {
        return;
    };
    let _heavy = crate::harness::heavy();
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    // As the README says: the URL from the environment, set once, and the server's password
    // in PGPASSWORD, nothing else. Every pane (lead and teammates) must connect with it.
    let field = |key: &str| crate::harness::url_setting(&url, key);
    let readme_url = format!(
        "postgres://{}@127.0.0.1:{}/{}",
        field("user"),
        field("port"),
        field("dbname")
    );
    let out = run_timeout(
        env.swarm(&[
            "demo",
            "--no-attach",
            "--keep",
            "--dir",
            &job.display().to_string(),
        ])
        .env("SWARM_STORE_URL", &readme_url)
        .env("PGPASSWORD", swarm_store_pg::testing::TEAM_PASSWORD),
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
    let tasks = in_database(&readme_url, &env, team).tasks().list().unwrap();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    assert!(
        tasks
            .iter()
            .all(|t| t.status == swarm_store::tasks::Status::Completed),
        "{tasks:?}"
    );
}

/// `swarm run --store postgres:///` with the server named by `PG*` variables and the
/// password in `~/.pgpass`, as a user whose `psql` already works has it: the team is made
/// in the database, and its lead (started in tmux with only `--root`) reaches the same
/// server through the pointer and those variables: its task and its state are rows, and
/// no task file is written.
#[test]
fn a_run_with_store_makes_its_team_in_the_database_and_its_lead_works_there() {
    let Some(url) = swarm_store_pg::testing::team_database() else {
        return;
    };
    let mut env = TestEnv::new();
    env.give_password(crate::harness::Password::File);
    let field = |key: &str| crate::harness::url_setting(&url, key);
    let model = ScriptedModel::lead_with_one_task("build");
    let mut cmd = env.swarm(&["run", "build it", "--team", "t", "--no-attach"]);
    cmd.args(["--provider", "scripted", "--base-url", &model.url()])
        .args(["--store", "postgres:///"])
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", field("port"))
        .env("PGUSER", field("user"))
        .env("PGDATABASE", field("dbname"))
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
/// says so in its pane, starts no model call though it has mail to answer, and carries on
/// when the server is back (it answers that mail).
#[test]
fn a_teammate_waits_out_its_database_and_carries_on_when_it_returns() {
    let Some(server) = Private::start() else {
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
    let pane = || panes(&env);
    assert!(
        wait_until(Duration::from_secs(30), idle),
        "bob never went idle:\n{}",
        pane()
    );

    // A reason to call the model: mail, sent while bob is stopped (so it cannot have read
    // it), and then the server crashes. bob's listening connection holds the mail's
    // notice; resumed, its loop wakes for it and finds the database away.
    use nix::sys::signal::Signal;
    let asked = model.requests().len();
    let pid = env.signal_agent("t", "bob", Signal::SIGSTOP);
    env.run(&["--team", "t", "send", "bob", "ping"]).success();
    server.crash();
    crate::harness::signal_recorded(pid, swarm_util::process::start_ticks(pid), Signal::SIGCONT);
    // Its calls wait out a short outage (`OUTAGE_WAIT`, 10 s) before the loop says so: the
    // sign that it looked after the mail came, with the database away.
    let said = wait_until(Duration::from_secs(60), || {
        pane().contains("waiting for the team's database")
    });
    if !said {
        env.print_evidence();
    }
    assert!(said, "bob's pane does not say it waits:\n{}", pane());
    // `swarm status` says so too, once it has waited for the server as long as a command
    // does: in one line, naming the server, exit 11.
    let away = run_timeout(
        &mut env.swarm(&["--team", "t", "status"]),
        Duration::from_secs(60),
    )
    .failure(11);
    assert!(
        away.stderr.contains("team's database")
            && away.stderr.contains("did not come back within 10 s")
            && away.stderr.trim().lines().count() == 1,
        "{}",
        away.stderr
    );
    assert_eq!(
        model.requests().len(),
        asked,
        "a model call while the database was away"
    );
    server.run();

    // The mail it could not read was a real reason: back, it answers it.
    assert!(
        wait_until(Duration::from_secs(60), || db()
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
    let declared = wait_until(Duration::from_secs(60), || {
        dead = crate::harness::member_json(&env.status_json("t", BEAT_TIMEOUT_MS), "alice");
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
    env.status_json("t", BEAT_TIMEOUT_MS);
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

/// A beat late by less than the timeout fences nobody; one older than the timeout does.
/// bob's process is registered (this test's own, so on this host its pid lives: only its
/// beat decides), and its last beat is set back by the server's clock, as a loaded machine
/// or a slow write would leave it: half the timeout, then more than all of it. `swarm
/// status` is the observer that judges and fences, as the lead's supervisor does.
#[test]
fn a_beat_late_by_less_than_the_timeout_fences_nobody() {
    use swarm_store::state::{Activity, AgentState};
    let Some(env) =
        crate::harness::TestEnv::with_team_on(crate::harness::Backend::Postgres, "t", &["bob"])
    else {
        return;
    };
    let url = env.store_url.clone().unwrap();
    let bob = AgentName::new("bob").unwrap();
    // bob's own handle: registering fences its database's transactions, no one else's.
    let bobs = in_database(&url, &env, "t");
    let token = bobs.agents().register_process(&bob).unwrap().unwrap();
    let mut state = AgentState::new(Activity::Idle);
    state.pid = std::process::id() as i32;
    state.start_ticks = swarm_util::process::start_ticks(state.pid);
    state.token = Some(token);
    state.host = Some(swarm_store::liveness::this_host().to_owned());
    bobs.agents().write_state(&bob, &state).unwrap();
    let late_by = |ms: u64| {
        sql(
            &url,
            &format!(
                "UPDATE processes SET beat_at = clock_timestamp() - interval '{ms} milliseconds' \
                 WHERE token = {token} RETURNING 'late'"
            ),
        );
    };
    let told = || {
        env.lead_inbox("t")
            .iter()
            .filter(|e| e.text.contains("teammate_terminated") && e.text.contains("bob"))
            .count()
    };

    late_by(BEAT_TIMEOUT_MS / 2);
    let seen = crate::harness::member_json(&env.status_json("t", BEAT_TIMEOUT_MS), "bob");
    assert_ne!(seen["state"], "dead", "{seen}");
    bobs.agents().heartbeat(token).unwrap();
    assert_eq!(told(), 0);

    // The control: a beat older than the timeout is a death, fenced. A beat's age counts
    // from the server's start at the earliest, so first the server must have run longer.
    let up_ms = || {
        sql(
            &url,
            "SELECT ((extract(epoch FROM clock_timestamp() - pg_postmaster_start_time()) * 1000)::bigint)::text",
        )
        .unwrap()
        .parse::<u64>()
        .unwrap()
    };
    assert!(wait_until(Duration::from_secs(60), || up_ms() > BEAT_TIMEOUT_MS));
    late_by(2 * BEAT_TIMEOUT_MS);
    let seen = crate::harness::member_json(&env.status_json("t", BEAT_TIMEOUT_MS), "bob");
    assert_eq!(seen["state"], "dead", "{seen}");
    assert!(matches!(
        bobs.agents().heartbeat(token),
        Err(swarm_store::error::Error::Fenced(_))
    ));
    assert_eq!(told(), 1);
}

/// The demo job on a PostgreSQL team whose server crashes (an immediate shutdown, crash
/// recovery at its next start) once the teammates work on their tasks, and stays away
/// longer than the heartbeat timeout: every agent reconnects and carries on, the run
/// finishes with every task completed and the job's check passing, and nobody was declared
/// dead for the silence.
///
/// The silence must outlast the timeout for that last check to mean anything: an observer
/// that counted a beat's age from the beat alone (not from the server's start, as
/// `liveness` says) would find every member silent for longer than the timeout once the
/// server is back, and declare them dead. So the timeout is 8 s (`SWARM_HEARTBEAT_TIMEOUT_MS`,
/// which the lead inherits: it judges) and the server stays down 10 s; every call waits up
/// to a minute for it (`SWARM_OUTAGE_WAIT_MS`, as a user expecting long restarts sets it),
/// so no call in flight, a model's tool among them, fails for the outage and the job is
/// not left with a task its teammate gave up on; `swarm status` judges the team again the
/// moment the server is back, before every member has beaten again.
#[test]
fn the_demo_job_finishes_through_a_restart_of_its_database() {
    let Some(server) = Private::start() else {
        return;
    };
    let _heavy = crate::harness::heavy();
    let url = server.url("postgres");
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    const TIMEOUT_MS: &str = "8000";
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
    demo.env("SWARM_HEARTBEAT_TIMEOUT_MS", TIMEOUT_MS)
        .env("SWARM_OUTAGE_WAIT_MS", "60000")
        .stdout(std::fs::File::create(&out_path).unwrap())
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
    // Longer than the heartbeat timeout, shorter than a call's wait.
    std::thread::sleep(Duration::from_secs(10));
    server.run();
    let judged = run(env
        .swarm(&["--team", &team().unwrap(), "status", "--json"])
        .env("SWARM_HEARTBEAT_TIMEOUT_MS", TIMEOUT_MS))
    .success();
    let judged: Value = serde_json::from_str(&judged.stdout).unwrap();
    let dead: Vec<&Value> = judged["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["state"] == "dead")
        .collect();
    assert!(dead.is_empty(), "dead after the outage: {dead:?}");

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
