//! Whether an agent's process lives: the one rule every observer applies (`swarm status`,
//! the lead's supervisor, a run's waiter, a lead refusing a second lead).
//!
//! On the file store every member runs on this host, and its liveness is its process: the
//! pid and the process's start time (`AgentState::process_alive`). On a backend whose
//! members may run on other hosts (PostgreSQL), each process registers and beats
//! ([`crate::seam::Agents::register_process`]); its [`Heartbeat`] says when it last beat,
//! by the store's clock, so hosts need not agree on the time.
//!
//! Invariants:
//! - a process declared dead stays dead: nothing makes it alive again, and the store
//!   refuses its writes (its fencing token is spent);
//! - a process on this host whose pid is gone is dead at once, heartbeat or not (a
//!   `kill -9` is noticed as quickly as on files);
//! - otherwise it is alive while its last beat is younger than the team's timeout
//!   (`SWARM_HEARTBEAT_TIMEOUT_MS`, [`DEFAULT_TIMEOUT`]); a process beats every
//!   [`BEAT_EVERY`], so a timeout is several missed beats, never one slow write.

use std::sync::OnceLock;
use std::time::Duration;

/// How often a registered process beats.
pub const BEAT_EVERY: Duration = Duration::from_secs(1);

/// How long a process may go without a beat before it is declared dead, unless the
/// observer's settings say otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest timeout taken: three beats.
pub const MIN_TIMEOUT: Duration = Duration::from_secs(3);

/// One registered process of an agent, as the store last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub agent: String,
    /// Its fencing token: larger than every token registered before it in the store.
    pub token: i64,
    /// The host it runs on ([`this_host`] there).
    pub host: String,
    pub pid: i32,
    /// With the pid, identifies the process on its host even after the pid is reused.
    pub start_ticks: Option<u64>,
    /// Milliseconds since its last beat, by the store's clock.
    pub age_ms: i64,
    /// It was declared dead (or a newer process of the agent registered): its writes are
    /// refused.
    pub dead: bool,
}

impl Heartbeat {
    /// Whether the process lives, by the module's rule, with `timeout` as the team's.
    pub fn alive(&self, timeout: Duration) -> bool {
        if self.dead || self.age_ms >= timeout.as_millis() as i64 {
            return false;
        }
        !is_here(Some(&self.host))
            || swarm_util::process::is_alive_since(self.pid, self.start_ticks)
    }

    /// Why it is not alive, for a report ("its heartbeat stopped 12 s ago").
    pub fn why_dead(&self, timeout: Duration) -> String {
        if self.dead {
            "declared dead".to_owned()
        } else if self.age_ms >= timeout.as_millis() as i64 {
            format!(
                "its heartbeat stopped {} s ago (timeout {} s)",
                self.age_ms / 1000,
                timeout.as_secs()
            )
        } else {
            "process gone".to_owned()
        }
    }
}

/// Which process of an agent a report of its end is about (`Agents::claim_exit_report`'s
/// instance): its fencing token where processes beat (pids repeat across hosts), else its
/// pid.
pub fn instance(token: Option<i64>, pid: i32) -> String {
    match token {
        Some(token) => format!("token{token}"),
        None => pid.to_string(),
    }
}

/// Whether a process that says it runs on `host` runs here (`None`: it said nothing, as a
/// process of a file team does, which is always here). Only then does its pid mean
/// anything to this process.
pub fn is_here(host: Option<&str>) -> bool {
    host.is_none_or(|h| h == this_host())
}

/// This host's name, as processes register it.
pub fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(age_ms: i64, dead: bool, host: &str, pid: i32) -> Heartbeat {
        Heartbeat {
            agent: "bob".into(),
            token: 7,
            host: host.into(),
            pid,
            start_ticks: None,
            age_ms,
            dead,
        }
    }

    #[test]
    fn a_process_lives_by_its_beat_and_on_this_host_by_its_pid_too() {
        let me = std::process::id() as i32;
        let timeout = Duration::from_secs(10);
        assert!(beat(500, false, this_host(), me).alive(timeout));
        assert!(!beat(500, true, this_host(), me).alive(timeout), "dead");
        assert!(!beat(10_000, false, this_host(), me).alive(timeout), "late");
        // A pid that means nothing here: another host's process lives by its beat alone.
        assert!(beat(500, false, "elsewhere", 0x7fff_fff0).alive(timeout));
        assert!(!beat(500, false, this_host(), 0x7fff_fff0).alive(timeout));
        assert!(
            beat(12_400, false, "h", 1)
                .why_dead(timeout)
                .contains("stopped 12 s ago")
        );
    }
}
