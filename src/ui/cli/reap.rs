//! `swarm reap PID START_TICKS GRACE_MS` (hidden): the last step of the shutdown ladder for
//! a teammate on another host, run there over ssh after its tmux session was ended.
//!
//! It waits up to `GRACE_MS` for the process to go, then sends SIGKILL (to its session when
//! it leads one: what its Bash tool left goes too) and waits up to 5 s more. It prints one
//! word: `gone`, `killed` or `running`. A pid is only ever signalled when it is the process
//! that started at `START_TICKS` there: a reused pid is someone else's.

use std::time::{Duration, Instant};

use clap::Args;
use nix::sys::signal::Signal;

use swarm::error::Result;
use swarm_util::process;

#[derive(Debug, Args)]
pub struct ReapArgs {
    /// The teammate's pid on this host
    pub pid: i32,
    /// When that process started, in clock ticks since boot (its /proc stat's 22nd field)
    pub start_ticks: u64,
    /// How long to wait for it to go before SIGKILL, in milliseconds
    pub grace_ms: u64,
}

pub fn run(args: ReapArgs) -> Result<u8> {
    let alive = || process::is_alive_since(args.pid, Some(args.start_ticks));
    let gone_within = |limit: Duration| {
        let deadline = Instant::now() + limit;
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        !alive()
    };
    let word = if gone_within(Duration::from_millis(args.grace_ms)) {
        "gone"
    } else {
        if process::session_of(args.pid) == Some(args.pid) {
            process::signal_session(args.pid, Signal::SIGKILL);
        } else {
            process::signal(args.pid, Signal::SIGKILL);
        }
        if gone_within(Duration::from_secs(5)) {
            "killed"
        } else {
            "running"
        }
    };
    println!("{word}");
    Ok(0)
}
