//! swarm-stress: one process of load for the concurrency tests and `scripts/bench`.
//!
//! Each mode loops over swarm's library calls (not the CLI), so many of these processes
//! together exercise the cross-process locking the way teammates do.
//!
//! ```text
//!   swarm-stress send     ROOT TEAM FROM TO COUNT [ACKED_LOG]   send COUNT messages "FROM-i"
//!   swarm-stress drain    ROOT TEAM AGENT EXPECT OUT            read+ack until EXPECT seen
//!   swarm-stress next     ROOT TEAM AGENT                       claim until none is ready
//!   swarm-stress hold     ROOT TEAM AGENT                       lock AGENT's inbox forever
//!   swarm-stress mkinbox  ROOT TEAM AGENT BYTES                 send one message of BYTES
//!   swarm-stress mktasks  ROOT TEAM COUNT                       create COUNT tasks
//!   swarm-stress timed    ROOT TEAM FROM TO COUNT GAP_MS        send, printing "text start_ns"
//!   swarm-stress reconcile ROOT TEAM SOCKET PASSES              time `team::supervisor::reconcile`
//!                                                               on tmux -L SOCKET, print ms each
//! ```
//!
//! Output is one line per event on stdout: the key or id it handled.

use std::io::Write;
use std::time::{Duration, Instant};

use swarm_config::settings::Settings;
use swarm_store::layout::Root;
use swarm_store::mailbox::Envelope;
use swarm_store::tasks::NewTask;
use swarm_store::{Store, Teams};
use swarm_util::environment::Environment;
use swarm_util::names::{AgentName, TeamName};

/// What every mode gets: its arguments, its team opened once, its settings, stdout.
struct Load {
    args: Vec<String>,
    root: Root,
    team: TeamName,
    store: Store,
    settings: Settings,
}

impl Load {
    fn arg(&self, i: usize) -> &str {
        self.args
            .get(i)
            .map(String::as_str)
            .unwrap_or_else(|| usage())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> &str { args.get(i).map(String::as_str).unwrap_or_else(|| usage()) };
    // The edge of this program: its settings come from its environment, once.
    let settings = Settings::resolve(Environment::capture());
    // A team on PostgreSQL (`scripts/bench store --store`) is opened through its pointer.
    let opener = swarm_store_pg::PgOpener::new(settings.env.clone());
    let root = Root::new(arg(1)).with_store_settings(settings.lock_timeout, settings.durable);
    let team = TeamName::new(arg(2)).expect("team name");
    // Opened once, as every swarm process opens its team.
    let store = Teams::new(root.clone())
        .with_servers(std::sync::Arc::new(opener))
        .open(&team)
        .unwrap_or_else(|e| fail(&e));
    let mode = arg(0).to_owned();
    let load = Load {
        args,
        root,
        team,
        store,
        settings,
    };
    match mode.as_str() {
        "send" => send(&load),
        "drain" => drain(&load),
        "next" => next(&load),
        "hold" => hold(&load),
        "mkinbox" => mkinbox(&load),
        "mktasks" => mktasks(&load),
        "timed" => timed(&load),
        "reconcile" => reconcile(&load),
        _ => usage(),
    }
}

/// `send FROM TO COUNT [ACKED_LOG]`.
fn send(load: &Load) {
    let from = load.arg(3);
    let to = AgentName::parse_any(load.arg(4)).expect("agent name");
    let count: usize = load.arg(5).parse().expect("count");
    let mut acked = load.args.get(6).map(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .expect("acked log")
    });
    for i in 0..count {
        let text = format!("{from}-{i}");
        load.store
            .mail()
            .deliver(&to, Envelope::new(from, text.clone()))
            .unwrap_or_else(|e| fail(&e));
        if let Some(f) = acked.as_mut() {
            // One write per line: O_APPEND keeps concurrent writers' lines whole.
            f.write_all(format!("{text}\n").as_bytes())
                .expect("write acked log");
        }
    }
}

/// `drain AGENT EXPECT OUT`.
fn drain(load: &Load) {
    let agent = AgentName::parse_any(load.arg(3)).expect("agent name");
    let expect: usize = load.arg(4).parse().expect("count");
    let mut log = std::fs::File::create(load.arg(5)).expect("out file");
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen < expect && Instant::now() < deadline {
        let mail = load.store.mail();
        let batch = mail.read_unread(&agent).unwrap_or_else(|e| fail(&e));
        let keys: Vec<String> = batch.iter().map(|d| d.key.clone()).collect();
        for d in &batch {
            writeln!(log, "{}", d.envelope.text).expect("write");
        }
        log.flush().expect("flush");
        mail.ack(&agent, &keys).unwrap_or_else(|e| fail(&e));
        seen += batch.len();
        if batch.is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `next AGENT`.
fn next(load: &Load) {
    let mut out = std::io::stdout().lock();
    let list = load.store.tasks();
    while let Some(task) = list.next(load.arg(3)).unwrap_or_else(|e| fail(&e)) {
        writeln!(out, "{}", task.id).expect("write");
    }
}

/// `hold AGENT`.
fn hold(load: &Load) {
    let agent = AgentName::parse_any(load.arg(3)).expect("agent name");
    let inbox = load.root.inbox_path(&load.team, &agent);
    let _guard =
        swarm_util::lock::lock(&inbox, load.root.lock_timeout()).unwrap_or_else(|e| fail(&e));
    let mut out = std::io::stdout().lock();
    writeln!(out, "locked").expect("write");
    out.flush().expect("flush");
    std::thread::sleep(Duration::from_secs(3600));
}

/// `mkinbox AGENT BYTES`.
fn mkinbox(load: &Load) {
    let agent = AgentName::parse_any(load.arg(3)).expect("agent name");
    let bytes: usize = load.arg(4).parse().expect("bytes");
    let key = load
        .store
        .mail()
        .deliver(&agent, Envelope::new("team-lead", "x".repeat(bytes)))
        .unwrap_or_else(|e| fail(&e));
    writeln!(std::io::stdout().lock(), "{key}").expect("write");
}

/// `mktasks COUNT`.
fn mktasks(load: &Load) {
    let count: usize = load.arg(3).parse().expect("count");
    let list = load.store.tasks();
    for i in 0..count {
        list.create(NewTask {
            subject: format!("task {i}"),
            ..NewTask::default()
        })
        .unwrap_or_else(|e| fail(&e));
    }
}

/// `timed FROM TO COUNT GAP_MS`.
fn timed(load: &Load) {
    let from = load.arg(3);
    let to = AgentName::parse_any(load.arg(4)).expect("agent name");
    let count: usize = load.arg(5).parse().expect("count");
    let gap = Duration::from_millis(load.arg(6).parse().expect("gap"));
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        let text = format!("{from}-{i}");
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos();
        load.store
            .mail()
            .deliver(&to, Envelope::new(from, text.clone()))
            .unwrap_or_else(|e| fail(&e));
        writeln!(out, "{text} {start}").expect("write");
        out.flush().expect("flush");
        std::thread::sleep(gap);
    }
}

/// `reconcile SOCKET PASSES`.
fn reconcile(load: &Load) {
    let tmux = swarm_tmux::Tmux::with_socket_name(load.arg(3));
    let passes: usize = load.arg(4).parse().expect("passes");
    let mut out = std::io::stdout().lock();
    for _ in 0..passes {
        let start = Instant::now();
        let (seen, _) =
            swarm_team::life::supervisor::reconcile(&load.store, Some(&tmux), &load.settings.dirs)
                .unwrap_or_else(|e| fail(&e));
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        assert!(
            seen.tmux_reachable,
            "tmux server -L {} unreachable",
            load.arg(3)
        );
        writeln!(out, "{ms:.3} {}", seen.members.len()).expect("write");
    }
}

/// Ends the process as `swarm` would for `e`: its message, and its exit code (the same
/// mapping: `swarm::exit`).
fn fail(e: &(dyn std::error::Error + 'static)) -> ! {
    eprintln!("swarm-stress: {e}");
    std::process::exit(i32::from(swarm::exit::exit_code(e)));
}

fn usage() -> ! {
    eprintln!(
        "usage: swarm-stress send|drain|next|hold|mkinbox|mktasks|timed|reconcile ROOT TEAM ... (see the source)"
    );
    std::process::exit(2);
}
