//! What only the PostgreSQL backend promises, and why the file store does not:
//! - a send retried with the same message id (after a dropped connection, its outcome
//!   unknown) makes no second copy. The file store has no such doubt to settle: its send
//!   returns `Ok` only once the message is in the inbox and an error only when it never
//!   will be (or `SendInDoubt`, which says not to send again), so it does not dedupe;
//! - the server is reached over a connection: an unreachable one is a one-line error
//!   naming it, never its password (exit code 11), and the schema is versioned and brought
//!   forward from an older version (files have no schema);
//! - what is held (the lead's place) lasts as long as its connection, so the server frees
//!   it when the connection dies (the file store's lock is freed by the kernel when the
//!   process dies, which the contract cannot do to its own test process);
//! - the lock timeout is the database's own (the file store's is its root's, tested with
//!   the store): a bounded wait ends in exit 5 while a merge run waits on past it;
//! - a password comes from `PGPASSWORD` or a private password file, as `psql` takes it
//!   (files need none);
//! - TLS to the server as `sslmode` asks (files have no server to trust);
//! - the server can crash and come back mid-run: no acknowledged write is lost, none is
//!   made twice, no task is claimed twice (the file store's kills are the fault
//!   campaign's, `scripts/bench faults`);
//! - wake-ups come over a connection, which can be lost and must be made again (the file
//!   store's come from the kernel);
//! - a process's liveness is its heartbeat, and one declared dead is fenced: the store
//!   refuses its every write (on files every member is on this host, its liveness is its
//!   pid, and a process that is gone cannot write).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::{Duration, Instant};

use crate::backends::{Team, agent, no_env, postgres};
use swarm_store::mailbox::Envelope;
use swarm_store_pg::connect::Retry;
use swarm_store_pg::{Database, PgStore, migrate};
use swarm_util::environment::Environment;
use swarm_util::names::TeamName;

fn team() -> Option<Team> {
    postgres()
}

/// A root for a store whose local files the test never makes.
fn nowhere() -> swarm_store::Root {
    swarm_store::Root::new("/nonexistent/swarm-test-root")
}

#[test]
fn a_retried_send_makes_no_second_copy_even_after_it_was_acknowledged() {
    let Some(team) = team() else { return };
    team.add(&["bob", "carol"]);
    let bob = agent("bob");
    let envelope = Envelope::new("team-lead", "once");
    let first = team.mail().send("bob", envelope.clone()).unwrap();
    let again = team.open().mail().send("bob", envelope.clone()).unwrap();
    assert_eq!(first, again, "the retry is told the copy it made");
    assert_eq!(team.mail().read_unread(&bob).unwrap().len(), 1);
    team.mail().ack(&bob, &[first[0].msg_id.clone()]).unwrap();
    team.mail().send("bob", envelope).unwrap();
    assert!(team.mail().read_unread(&bob).unwrap().is_empty());
    assert_eq!(team.mail().read_delivered(&bob).unwrap().len(), 1);
    // A broadcast's copies have ids of their own; its retry still makes none.
    let all = Envelope::new("team-lead", "all");
    let first = team.mail().send("*", all.clone()).unwrap();
    assert_eq!(team.mail().send("*", all).unwrap(), first);
    assert_eq!(team.mail().read_unread(&agent("carol")).unwrap().len(), 1);
}

/// Every connection of the test's database is killed, again and again, while four senders
/// send: each send either returns `Ok` with its message in the inbox once, or fails; no
/// message is lost after an `Ok` and none is doubled by the retries.
#[test]
fn sends_through_dropped_connections_lose_nothing_and_double_nothing() {
    let Some(team) = team() else { return };
    team.add(&["bob", "s0", "s1", "s2", "s3"]);
    let url = team.url.clone().expect("a database");
    let handles: Vec<_> = (0..4).map(|_| team.open()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let mut kills = 0;
            while !stop.load(Ordering::Relaxed) {
                kills += admin
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE datname = current_database() AND pid <> pg_backend_pid()",
                        &[],
                    )
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            kills
        })
    };
    let oks: Vec<String> = std::thread::scope(|scope| {
        let senders: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(s, handle)| {
                scope.spawn(move || {
                    let from = format!("s{s}");
                    (0..60)
                        .filter_map(|i| {
                            let e = Envelope::new(&from, format!("{from} {i}"));
                            handle
                                .mail()
                                .send("bob", e)
                                .ok()
                                .map(|mut sent| sent.remove(0).msg_id)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        senders
            .into_iter()
            .flat_map(|s| s.join().unwrap())
            .collect()
    });
    stop.store(true, Ordering::Relaxed);
    let kills = killer.join().unwrap();
    assert!(kills > 0, "connections were dropped");
    let inbox = team.mail().read_unread(&agent("bob")).unwrap();
    let mut keys: Vec<&str> = inbox.iter().map(|d| d.key.as_str()).collect();
    keys.sort_unstable();
    let before = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), before, "no message twice");
    assert!(
        oks.iter()
            .all(|id| keys.binary_search(&id.as_str()).is_ok()),
        "none lost"
    );
    eprintln!(
        "{kills} connections dropped; {} of 240 sends returned ok",
        oks.len()
    );
}

#[test]
fn an_unreachable_server_is_one_line_naming_it_without_its_password() {
    // Port 1 on loopback: nothing listens there, and the refusal is immediate. The
    // password comes as users give it (never in the URL, which is refused for holding one).
    let url = "postgres://swarm@127.0.0.1:1/teams";
    let in_url = PgStore::connect(
        "postgres://swarm:hunter2-secret@127.0.0.1:1/teams",
        &no_env(),
        &nowhere(),
        &TeamName::new("t").unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        in_url.contains("holds a password") && !in_url.contains("hunter2"),
        "{in_url}"
    );
    let err =
        PgStore::connect(url, &no_env(), &nowhere(), &TeamName::new("t").unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(err.away().is_some(), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.starts_with("failed to connect to the team's database at 127.0.0.1:1"),
        "{text}"
    );
    assert!(text.contains("database teams, user swarm"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    let bad = PgStore::connect(
        "postgres://a:b@host:notaport/x",
        &no_env(),
        &nowhere(),
        &TeamName::new("t").unwrap(),
    )
    .unwrap_err();
    assert!(bad.is_usage(), "{bad}");
    assert!(!bad.to_string().contains(":b@"), "{bad}");
}

#[test]
fn a_password_comes_from_pgpassword_or_a_private_password_file_and_is_never_shown() {
    use std::os::unix::fs::PermissionsExt;
    use swarm_store_pg::testing::PASSWORD_ROLE as ROLE;
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    // A role that must give its password, owning a database of its own.
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let secret = "pw-Secret-4711";
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') \
             THEN CREATE ROLE {ROLE} LOGIN; END IF; END $$; \
             ALTER ROLE {ROLE} PASSWORD '{secret}'"
        ))
        .unwrap();
    let db: String = admin
        .query_one("SELECT current_database()", &[])
        .unwrap()
        .get(0);
    admin
        .batch_execute(&format!("ALTER DATABASE {db} OWNER TO {ROLE}"))
        .unwrap();
    let as_role = url.replace("user=postgres", &format!("user={ROLE}"));
    let port = url
        .split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let pgpass = home.path().join(".pgpass");
    let home_env = |extra: &[(&str, &str)]| {
        let mut pairs = vec![("HOME", home.path().to_str().unwrap())];
        pairs.extend_from_slice(extra);
        Environment::from_pairs(pairs)
    };
    let open = |env: &Environment| {
        PgStore::connect(&as_role, env, &nowhere(), &TeamName::new("t").unwrap())
    };

    // No password anywhere: refused by the server, exit 11.
    let err = open(&home_env(&[])).unwrap_err();
    assert!(err.away().is_some(), "{err}");
    // PGPASSWORD: in; a wrong one is refused without being shown.
    open(&home_env(&[("PGPASSWORD", secret)])).unwrap();
    let err = open(&home_env(&[("PGPASSWORD", "wrong-Guess-99")])).unwrap_err();
    assert!(!err.to_string().contains("wrong-Guess-99"), "{err}");
    // ~/.pgpass, private: in. Readable by others: ignored, as psql ignores it.
    std::fs::write(
        &pgpass,
        format!("# the test's\nlocalhost:{port}:*:{ROLE}:{secret}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    open(&home_env(&[])).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = open(&home_env(&[])).unwrap_err();
    assert!(!err.to_string().contains(secret), "{err}");
}

#[test]
fn tls_is_used_and_checked_as_the_sslmode_asks() {
    let Some(tls) = swarm_store_pg::testing::tls() else {
        return;
    };
    use swarm_store_pg::testing::{TEAM_PASSWORD, TEAM_ROLE};
    let url = |host: &str, settings: &str| {
        format!(
            "host={host} port={} user={TEAM_ROLE} dbname=postgres {settings}",
            tls.port
        )
    };
    // Over TCP the server asks for a password, as a team's would.
    let password = Environment::from_pairs([("PGPASSWORD", TEAM_PASSWORD)]);
    let open = |url: &str| Database::open(url, &password);
    // Whether the connection the store makes is encrypted, as the server sees it.
    let encrypted = |db: &Database| {
        db.run(Retry::Safe, "look at the connection", |c| {
            let row = c.query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )?;
            Ok(row.get::<_, bool>(0))
        })
        .unwrap()
    };
    let ca = format!("sslrootcert={}", tls.ca.display());
    let other = format!("sslrootcert={}", tls.other_ca.display());

    // verify-full: the chain and the name; both hold for localhost.
    let db = open(&url("localhost", &format!("sslmode=verify-full {ca}"))).unwrap();
    assert!(encrypted(&db));
    // The certificate does not name 127.0.0.1: verify-full refuses it, verify-ca does not.
    let err = open(&url("127.0.0.1", &format!("sslmode=verify-full {ca}"))).unwrap_err();
    assert!(err.away().is_some(), "{err}");
    assert!(encrypted(
        &open(&url("127.0.0.1", &format!("sslmode=verify-ca {ca}"))).unwrap()
    ));
    // A root that did not sign it: refused, even by require (a root given is checked).
    for mode in ["verify-full", "verify-ca", "require"] {
        let err = open(&url("localhost", &format!("sslmode={mode} {other}"))).unwrap_err();
        assert!(err.away().is_some(), "{mode}: {err}");
    }
    // require without a root: encrypted, not checked; disable: not encrypted. The URL form
    // too, with the mode from PGSSLMODE.
    assert!(encrypted(
        &open(&url("localhost", "sslmode=require")).unwrap()
    ));
    assert!(!encrypted(
        &open(&url("localhost", "sslmode=disable")).unwrap()
    ));
    let env = Environment::from_pairs([("PGSSLMODE", "require"), ("PGPASSWORD", TEAM_PASSWORD)]);
    let db = Database::open(
        &format!("postgres://{TEAM_ROLE}@localhost:{}/postgres", tls.port),
        &env,
    )
    .unwrap();
    assert!(encrypted(&db));
}

#[test]
fn the_schema_is_migrated_once_and_a_newer_one_is_refused() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let db = Database::open(&url, &no_env()).unwrap();
    assert_eq!(migrate::version(&db).unwrap(), 0);
    assert_eq!(migrate::migrate(&db).unwrap(), 0);
    assert_eq!(
        migrate::migrate(&db).unwrap(),
        migrate::LATEST,
        "nothing to do twice"
    );
    // Several processes at their first use at once: each migration applied once.
    let url2 = swarm_store_pg::testing::database().unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                PgStore::connect(&url2, &no_env(), &nowhere(), &TeamName::new("t").unwrap())
                    .unwrap()
            });
        }
    });
    let mut admin = postgres::Client::connect(&url2, postgres::NoTls).unwrap();
    let applied: i64 = admin
        .query_one("SELECT count(*) FROM schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(applied, i64::from(migrate::LATEST));
    admin
        .execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&(migrate::LATEST + 1)],
        )
        .unwrap();
    let newer =
        PgStore::connect(&url2, &no_env(), &nowhere(), &TeamName::new("t").unwrap()).unwrap_err();
    assert!(newer.away().is_some(), "{newer}");
    assert!(newer.to_string().contains("upgrade swarm"), "{newer}");
}

#[test]
fn a_team_not_in_the_database_is_not_found_and_teams_are_apart() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let ghost = PgStore::connect(
        &url,
        &no_env(),
        &nowhere(),
        &TeamName::new("ghost").unwrap(),
    )
    .unwrap();
    use swarm_store::seam::{Mailboxes, Roster, TaskBoard};
    assert!(ghost.load().unwrap_err().is_not_found());
    assert!(ghost.next("bob").unwrap_err().is_not_found());
    assert!(
        ghost
            .deliver(&agent("bob"), Envelope::new("x", "y"))
            .unwrap_err()
            .is_not_found()
    );
    let dir = tempfile::tempdir().unwrap();
    ghost.create_team(None, dir.path()).unwrap();
    assert!(
        ghost
            .create_team(None, dir.path())
            .unwrap_err()
            .is_conflict()
    );
    let other = PgStore::connect(
        &url,
        &no_env(),
        &nowhere(),
        &TeamName::new("other").unwrap(),
    )
    .unwrap();
    other.create_team(None, dir.path()).unwrap();
    ghost
        .create(swarm_store::tasks::NewTask {
            subject: "a".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(other.list().unwrap().is_empty());
    ghost.delete_on_server().unwrap();
    assert!(ghost.load().unwrap_err().is_not_found());
    assert_eq!(other.load().unwrap().name, "other");
}

/// The lead's connection is killed (as its process dying would end it): the server frees
/// its place, a new lead takes it, and the old hold, dropped late, harms nothing.
#[test]
fn a_lead_whose_connection_dies_frees_its_place() {
    let Some(team) = team() else { return };
    let lead = team.agents().acquire_lead().unwrap();
    let other = team.open();
    assert!(other.agents().lead_running());
    let mut admin = postgres::Client::connect(team.url.as_ref().unwrap(), postgres::NoTls).unwrap();
    let killed = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .unwrap();
    assert_eq!(killed, 1, "the lead's connection");
    let deadline = Instant::now() + Duration::from_secs(10);
    while other.agents().lead_running() {
        assert!(
            Instant::now() < deadline,
            "the server never freed the lead's place"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let next = other.agents().acquire_lead().unwrap();
    drop(lead);
    assert!(other.agents().lead_running(), "the new lead still leads");
    drop(next);
    assert!(!other.agents().lead_running());
}

/// A registered process holds a task; an observer declares it dead (as the supervisor does
/// when its heartbeat stops). From then on the store refuses each of its writes, the claim
/// it held included, with exit code 4; a new process of the same agent gets a larger token
/// and writes, and registering yet another fences that one in turn.
#[test]
fn a_process_declared_dead_writes_nothing_and_its_successor_does() {
    use swarm_store::tasks::{NewTask, Status, TaskPatch};
    let Some(team) = team() else { return };
    team.add(&["bob"]);
    let bob = agent("bob");
    let paused = team.open();
    let token = paused.agents().register_process(&bob).unwrap().unwrap();
    let task = team
        .tasks()
        .create(NewTask {
            subject: "build".into(),
            description: "it".into(),
            ..NewTask::default()
        })
        .unwrap();
    paused
        .tasks()
        .claim(&task.id, "bob", false)
        .unwrap()
        .unwrap();
    let beats = team.agents().heartbeats().unwrap().unwrap();
    assert_eq!(beats.len(), 1);
    assert!(beats[0].alive(Duration::from_secs(10)), "{beats:?}");
    assert_eq!((beats[0].token, beats[0].agent.as_str()), (token, "bob"));

    assert!(team.agents().declare_dead(token).unwrap());
    assert!(!team.open().agents().declare_dead(token).unwrap(), "once");
    let done = TaskPatch {
        status: Some(Status::Completed),
        ..TaskPatch::default()
    };
    let refused = paused.tasks().update(&task.id, done.clone()).unwrap_err();
    assert!(refused.is_conflict(), "{refused}");
    assert!(refused.to_string().contains("declared dead"), "{refused}");
    assert!(matches!(
        paused.agents().heartbeat(token),
        Err(swarm_store::error::Error::Fenced(_))
    ));
    assert!(
        paused
            .mail()
            .send("team-lead", Envelope::new("bob", "hi"))
            .is_err()
    );
    assert!(paused.tasks().release("bob").is_err());
    let still = team.tasks().get(&task.id).unwrap();
    assert_eq!(
        (still.status, still.owner.as_deref()),
        (Status::InProgress, Some("bob"))
    );

    let successor = team.open();
    let next = successor.agents().register_process(&bob).unwrap().unwrap();
    assert!(next > token);
    successor.tasks().update(&task.id, done).unwrap();
    successor.agents().heartbeat(next).unwrap();
    let third = team
        .open()
        .agents()
        .register_process(&bob)
        .unwrap()
        .unwrap();
    assert!(third > next);
    assert!(successor.agents().heartbeat(next).is_err(), "superseded");
    let beats = team.agents().heartbeats().unwrap().unwrap();
    assert_eq!(beats[0].token, third, "the newest process of each agent");
}

/// A beat's age is the server's clock's: it grows while the process is silent, and a
/// timeout shorter than the silence makes the process dead.
#[test]
fn a_process_whose_beats_stop_is_dead_after_the_timeout() {
    let Some(team) = team() else { return };
    team.add(&["bob"]);
    let token = team
        .agents()
        .register_process(&agent("bob"))
        .unwrap()
        .unwrap();
    team.agents().heartbeat(token).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let beat = team.agents().heartbeats().unwrap().unwrap().remove(0);
    assert!((400..5_000).contains(&beat.age_ms), "{beat:?}");
    assert!(beat.alive(Duration::from_secs(10)));
    assert!(!beat.alive(Duration::from_millis(300)));
    assert!(
        beat.why_dead(Duration::from_millis(300))
            .contains("heartbeat stopped")
    );
    team.agents().heartbeat(token).unwrap();
    let beat = team.agents().heartbeats().unwrap().unwrap().remove(0);
    assert!(beat.age_ms < 400, "{beat:?}");
}

/// A server's restart ends the lead's connection, and its hold with it; a lead that beats
/// keeps its place all the same: another is refused, and the team is led. Once the lead is
/// declared dead, the place is free.
#[test]
fn a_lead_that_beats_keeps_its_place_when_its_hold_is_lost() {
    let Some(team) = team() else { return };
    let led = team.open();
    let hold = led.agents().acquire_lead().unwrap();
    let token = led
        .agents()
        .register_process(&agent("team-lead"))
        .unwrap()
        .unwrap();
    let mut admin = postgres::Client::connect(team.url.as_ref().unwrap(), postgres::NoTls).unwrap();
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .unwrap();
    let other = team.open();
    assert!(other.agents().lead_running(), "the lead beats");
    let refused = other.agents().acquire_lead().err().expect("a second lead");
    assert!(refused.is_conflict(), "{refused}");
    assert!(other.agents().declare_dead(token).unwrap());
    assert!(!other.agents().lead_running());
    let next = other.agents().acquire_lead().unwrap();
    drop((hold, next));
}

/// With a short lock timeout: a worktree record's lock not had in time is a one-line error
/// (exit code 5) naming the wait, while a merge run waits on past several timeouts for the
/// run before it (a long check is no fault) and gets it when that run ends.
#[test]
fn a_bounded_wait_ends_in_an_error_and_a_run_waits_past_it() {
    let Some(team) = team() else { return };
    let url = team.url.clone().unwrap();
    let db = Database::with_lock_timeout(&url, &no_env(), Duration::from_millis(200)).unwrap();
    let waiter = PgStore::on(
        Arc::new(db),
        &nowhere(),
        &TeamName::new("contract").unwrap(),
    );
    let held = team.worktrees().lock_worktree("bob").unwrap();
    let err = swarm_store::Worktrees::lock_worktree(&waiter, "bob")
        .err()
        .expect("held by another");
    assert!(err.away().is_some(), "{err}");
    assert!(
        err.to_string().contains("stayed held for more than 200ms"),
        "{err}"
    );
    drop(held);
    drop(swarm_store::Worktrees::lock_worktree(&waiter, "bob").unwrap());
    let run = team.merge_queue().acquire_run().unwrap();
    let started = Instant::now();
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mine = swarm_store::MergeQueue::acquire_run(&waiter).unwrap();
            said.send(started.elapsed()).unwrap();
            drop(mine);
        });
        // Five lock timeouts and more, then the run ends.
        assert!(
            heard.recv_timeout(Duration::from_millis(1_100)).is_err(),
            "taken while held"
        );
        drop(run);
        let waited = heard.recv_timeout(Duration::from_secs(20)).unwrap();
        assert!(waited >= Duration::from_millis(1_100), "{waited:?}");
    });
}

/// The listening connection is killed: the listener connects again, wakes its watchers
/// (something may have changed while nobody listened), and later writes wake them again.
#[test]
fn a_watch_outlives_its_lost_connection() {
    let Some(team) = team() else { return };
    let (rang, rings) = std::sync::mpsc::channel();
    let _watch = team.backend().watch(
        swarm_store::Topic::Tasks,
        Box::new(move || {
            let _ = rang.send(());
        }),
    );
    let mut admin = postgres::Client::connect(team.url.as_ref().unwrap(), postgres::NoTls).unwrap();
    let killed = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND query ILIKE 'LISTEN%'",
            &[],
        )
        .unwrap();
    assert_eq!(killed, 1, "the listener's connection");
    let soon = Duration::from_secs(10);
    assert!(rings.recv_timeout(soon).is_ok(), "woken on reconnecting");
    while rings.try_recv().is_ok() {}
    team.open()
        .tasks()
        .create(swarm_store::tasks::NewTask {
            subject: "after".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(rings.recv_timeout(soon).is_ok(), "woken by a later write");
}

/// A database made by the first schema (the roster, mail and tasks of an earlier swarm)
/// is brought forward at its next use: the later migrations applied once each, what it
/// held kept, and the new parts usable.
#[test]
fn a_database_of_the_first_schema_is_migrated_forward_keeping_its_data() {
    let Some(team) = team() else { return };
    team.add(&["bob"]);
    team.mail()
        .send("bob", Envelope::new("team-lead", "kept"))
        .unwrap();
    let url = team.url.clone().unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // Back to version 1: the later migrations' tables gone, their rows in schema_version too.
    admin
        .batch_execute(
            "DROP TABLE approvals, agent_states, exit_reports, holds, merge_queues, budgets,
                        spend, launch_records, worktrees, rate_gates, processes;
             DROP SEQUENCE fences;
             DROP FUNCTION swarm_is_host, swarm_my_agents, swarm_my_teams, swarm_refuse,
                 swarm_check_roster, swarm_check_task, swarm_check_list, swarm_check_message,
                 swarm_check_mailbox, swarm_check_approval, swarm_check_process,
                 swarm_grant_hosts CASCADE;
             DELETE FROM schema_version WHERE version > 1;",
        )
        .unwrap();
    let db = Database::open(&url, &no_env()).unwrap();
    assert_eq!(migrate::version(&db).unwrap(), 1);
    assert_eq!(migrate::migrate(&db).unwrap(), 1, "from version 1");
    assert_eq!(migrate::version(&db).unwrap(), migrate::LATEST);
    let store = PgStore::on(
        Arc::new(db),
        &nowhere(),
        &TeamName::new("contract").unwrap(),
    );
    let inbox = swarm_store::Mailboxes::read_unread(&store, &agent("bob")).unwrap();
    assert_eq!(inbox[0].envelope.text, "kept");
    assert_eq!(swarm_store::Roster::load(&store).unwrap().members.len(), 2);
    assert!(swarm_store::Approvals::list(&store).unwrap().is_empty());
    assert!(!swarm_store::Agents::lead_running(&store));
}

/// Retries `op` until it succeeds, as an agent does while its database is away (each retry
/// the same call: a send keeps its message id, so a retry of one that went through before
/// the crash makes no second copy).
fn until_ok<T>(mut op: impl FnMut() -> swarm_store::error::Result<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match op() {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                assert!(e.away().is_some(), "only the server's absence: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("the database did not come back: {e}"),
        }
    }
}

#[test]
fn a_database_crash_mid_run_loses_no_acknowledged_write_and_doubles_none() {
    use swarm_store::seam::{Mailboxes, Roster, TaskBoard};
    use swarm_store::tasks::NewTask;
    let Some(server) = swarm_store_pg::testing::Private::start() else {
        return;
    };
    let url = server.url("postgres");
    let team = TeamName::new("t").unwrap();
    let store = PgStore::connect(&url, &no_env(), &nowhere(), &team).unwrap();
    store
        .create_team(None, std::path::Path::new("/work"))
        .unwrap();
    let senders = ["s0", "s1", "s2", "s3"];
    let claimers = ["c0", "c1", "c2", "c3"];
    for name in senders.iter().chain(&claimers).chain(&["sink"]) {
        store.add_member(crate::backends::member(name)).unwrap();
    }
    for i in 0..120 {
        let subject = format!("task {i}");
        store
            .create(NewTask {
                subject,
                ..NewTask::default()
            })
            .unwrap();
    }
    // Writers and claimers at work, each with its own handle, while the server crashes
    // twice (an immediate shutdown) and comes back. Each crash waits for sends acknowledged
    // since the last (so it comes mid-work), and every sender goes on past the second
    // restart: the sends span both crashes. (Counting the calls the outage refused would
    // not tell: a call waits out a crash of a server it reached, so hardly any is.)
    let done = AtomicBool::new(false);
    let acked = std::sync::atomic::AtomicUsize::new(0);
    let (sent, claimed) = std::thread::scope(|s| {
        let sending: Vec<_> = senders
            .iter()
            .map(|from| {
                let (url, team, done, acked) = (url.clone(), team.clone(), &done, &acked);
                s.spawn(move || {
                    let mine = PgStore::connect(&url, &no_env(), &nowhere(), &team).unwrap();
                    let mut sent = Vec::new();
                    let mut after = 0;
                    // Bounded: a server that never comes back fails `until_ok` first.
                    for i in 0..10_000 {
                        if done.load(Ordering::SeqCst) {
                            after += 1;
                            if after > 20 {
                                break;
                            }
                        }
                        let e = Envelope::new(from, format!("{from}-{i}"));
                        until_ok(|| mine.send("sink", e.clone()));
                        acked.fetch_add(1, Ordering::SeqCst);
                        sent.push(format!("{from}-{i}"));
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    sent
                })
            })
            .collect();
        let claiming: Vec<_> = claimers
            .iter()
            .map(|me| {
                let (url, team) = (url.clone(), team.clone());
                s.spawn(move || {
                    let mine = PgStore::connect(&url, &no_env(), &nowhere(), &team).unwrap();
                    let mut got = Vec::new();
                    while let Some(t) = until_ok(|| TaskBoard::next(&mine, me)) {
                        got.push(t.id);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    got
                })
            })
            .collect();
        let crashing = s.spawn(|| {
            let mut mid_work = true;
            for _ in 0..2 {
                let before = acked.load(Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(60);
                while acked.load(Ordering::SeqCst) < before + 40 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                mid_work &= acked.load(Ordering::SeqCst) >= before + 40;
                server.crash();
                server.run();
            }
            done.store(true, Ordering::SeqCst);
            mid_work
        });
        let sent: Vec<String> = sending
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        let claimed: Vec<String> = claiming
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        assert!(
            crashing.join().unwrap(),
            "a crash came before 40 more sends were acknowledged"
        );
        (sent, claimed)
    });
    assert!(
        done.load(Ordering::SeqCst),
        "the server was not crashed twice"
    );
    // Every acknowledged send is in the inbox once; no message twice.
    let inbox: Vec<String> = until_ok(|| store.read_unread(&agent("sink")))
        .into_iter()
        .map(|d| d.envelope.text)
        .collect();
    let unique: std::collections::HashSet<&String> = inbox.iter().collect();
    assert_eq!(unique.len(), inbox.len(), "a message delivered twice");
    assert!(
        sent.iter().all(|t| unique.contains(t)),
        "an acknowledged send is lost"
    );
    // No task claimed by two; every task claimed (a claim whose answer the crash took is
    // its claimer's in the database, though the claimer never heard).
    let unique: std::collections::HashSet<&String> = claimed.iter().collect();
    assert_eq!(unique.len(), claimed.len(), "a task claimed twice");
    let tasks = until_ok(|| TaskBoard::list(&store));
    assert!(
        tasks.iter().all(|t| t.owner.is_some()),
        "a task nobody holds"
    );
}

/// A server that restarts under a handle that reached it before is waited for: a write
/// made while it is down (a send, which is retried as it is idempotent, and a task's
/// creation, which is not, but whose connection was never made) returns `Ok` once the
/// server is back, instead of failing its caller. A server never reached is said at once.
#[test]
fn a_write_made_while_the_server_restarts_waits_for_it() {
    use swarm_store::seam::{Mailboxes, Roster, TaskBoard};
    use swarm_store::tasks::NewTask;
    let Some(server) = swarm_store_pg::testing::Private::start() else {
        return;
    };
    let url = server.url("postgres");
    let team = TeamName::new("t").unwrap();
    let store = PgStore::connect(&url, &no_env(), &nowhere(), &team).unwrap();
    store
        .create_team(None, std::path::Path::new("/work"))
        .unwrap();
    store.add_member(crate::backends::member("bob")).unwrap();
    server.crash();
    let (sent, made) = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            server.run();
        });
        let sent = store.send("bob", Envelope::new("team-lead", "across"));
        let made = store.create(NewTask {
            subject: "after".into(),
            ..NewTask::default()
        });
        (sent, made)
    });
    sent.unwrap();
    made.unwrap();
    assert_eq!(store.read_unread(&agent("bob")).unwrap().len(), 1);
    assert_eq!(store.list().unwrap().len(), 1);
}

/// A claim whose connection is lost before it commits (here: while it waits for the task
/// list's lock, its backend is terminated) was rolled back by the server, so it is made
/// again on a fresh connection: the claimer gets its task instead of an error, and the task
/// is claimed once.
#[test]
fn a_claim_lost_before_its_commit_is_made_again() {
    use swarm_store::tasks::{NewTask, Status};
    let Some(team) = team() else { return };
    team.add(&["bob"]);
    for subject in ["one", "two"] {
        team.tasks()
            .create(NewTask {
                subject: subject.into(),
                ..NewTask::default()
            })
            .unwrap();
    }
    let url = team.url.clone().unwrap();
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut held = holder.transaction().unwrap();
    held.execute("SELECT 1 FROM task_lists FOR UPDATE", &[])
        .unwrap();
    let claimer = team.open();
    let claimed = std::thread::scope(|s| {
        let claiming = s.spawn(|| claimer.tasks().next("bob"));
        // Its backend, waiting for the lock (ours is the holder's, which is not waiting).
        let waiting = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND wait_event_type = 'Lock'
                          AND query LIKE '%task_lists%FOR UPDATE%'";
        let deadline = Instant::now() + Duration::from_secs(20);
        while admin.execute(waiting, &[]).unwrap() == 0 {
            assert!(
                Instant::now() < deadline,
                "the claim never waited for the lock"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        held.rollback().unwrap();
        claiming.join().unwrap()
    });
    let task = claimed.unwrap().expect("a task");
    assert_eq!(task.id, "1");
    let tasks = team.tasks().list().unwrap();
    let owned: Vec<_> = tasks
        .iter()
        .filter(|t| t.owner.as_deref() == Some("bob"))
        .collect();
    assert_eq!(owned.len(), 1, "{tasks:?}");
    assert_eq!(owned[0].status, Status::InProgress);
}

/// A task's creation whose connection dies while the server works on its commit (a
/// deferred trigger sleeps there; its backend is terminated) did not commit: swarm asks the
/// server what became of the transaction, hears it was rolled back, and makes it again,
/// once. (A commit that went through is answered `Ok` the same way; the fault campaign's
/// restarts show both.)
#[test]
fn a_create_whose_commit_is_lost_is_settled_by_asking_the_server() {
    use swarm_store::tasks::NewTask;
    let Some(team) = team() else { return };
    let url = team.url.clone().unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "CREATE TABLE slow_commits (slow boolean);
             INSERT INTO slow_commits VALUES (true);
             CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF EXISTS (SELECT 1 FROM slow_commits) THEN PERFORM pg_sleep(30); END IF;
                 RETURN NULL;
             END $$;
             CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON tasks
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();",
        )
        .unwrap();
    let creator = team.open();
    let made = std::thread::scope(|s| {
        let making = s.spawn(|| {
            creator.tasks().create(NewTask {
                subject: "once".into(),
                ..NewTask::default()
            })
        });
        let committing = "SELECT pid FROM pg_stat_activity
                           WHERE datname = current_database() AND wait_event = 'PgSleep'";
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid: i32 = loop {
            if let Some(row) = admin.query_opt(committing, &[]).unwrap() {
                break row.get(0);
            }
            assert!(
                Instant::now() < deadline,
                "the commit never reached the trigger"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        admin.execute("DELETE FROM slow_commits", &[]).unwrap();
        admin
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        making.join().unwrap()
    });
    let task = made.unwrap();
    let tasks = team.tasks().list().unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].id, task.id);
}

/// A role that may not create swarm's tables (the schema belongs to another), or may not
/// read them, is told so in one line naming the server and what to do, with exit code 11.
#[test]
fn a_role_without_the_rights_it_needs_is_one_line_and_exit_11() {
    let Some(url) = swarm_store_pg::testing::database() else {
        return;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'swarm_nobody') \
             THEN CREATE ROLE swarm_nobody LOGIN; END IF; END $$; \
             REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        )
        .unwrap();
    let as_nobody = url.replace("user=postgres", "user=swarm_nobody");
    let team = TeamName::new("t").unwrap();
    let open = || PgStore::connect(&as_nobody, &no_env(), &nowhere(), &team);
    // The hint names the grants this test then makes.
    let check = |e: swarm_store::error::Error| {
        let text = e.to_string();
        assert!(e.away().is_some(), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("permission denied"), "{text}");
        assert!(text.contains("swarm store migrate"), "{text}");
    };
    // The schema is not made yet, and this role may not make it.
    check(open().unwrap_err());
    // Made by the owner; this role may not read it.
    PgStore::connect(&url, &no_env(), &nowhere(), &team)
        .unwrap()
        .create_team(None, std::path::Path::new("/work"))
        .unwrap();
    check(open().unwrap_err());
    // Granted as the line says: in.
    admin
        .batch_execute(
            "GRANT ALL ON ALL TABLES IN SCHEMA public TO swarm_nobody;              GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO swarm_nobody",
        )
        .unwrap();
    let store = open().unwrap();
    assert_eq!(swarm_store::Roster::load(&store).unwrap().name, "t");
}
