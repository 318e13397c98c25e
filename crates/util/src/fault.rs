//! Named fault points, so a test can kill or stop a process at an exact moment instead of
//! by luck.
//!
//! `SWARM_FAULT=<point>:<action>` (read once at start-up by the front end, like every
//! setting) makes the process act when it reaches `point`: `kill` raises SIGKILL (a crash
//! nothing can clean up after), `stop` raises SIGSTOP (a holder that hangs mid-write),
//! `panic` panics (a bug, which the process may catch and record).
//! `<point>:<action>@N` acts only on the N-th time the point is reached (from 1). Unset,
//! a point costs one atomic load. Points are named `<module>.<moment>`; the list lives
//! where each is reached, `grep -rn 'fault::point' src`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::environment::Environment;
use crate::vars;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Kill,
    Stop,
    Panic,
}

#[derive(Debug)]
struct Plan {
    point: String,
    action: Action,
    nth: u64,
    seen: AtomicU64,
}

static PLAN: OnceLock<Option<Plan>> = OnceLock::new();

/// Reads `SWARM_FAULT` from the captured environment. Called once, at the edge; an
/// unreadable value is ignored with a warning (it is a test's tool, never a user's).
pub fn install(env: &Environment) {
    let plan = env.get(vars::SWARM_FAULT).and_then(|spec| {
        let parsed = parse(spec);
        if parsed.is_none() {
            tracing::warn!(
                spec,
                "ignoring SWARM_FAULT: expected <point>:kill|stop|panic[@N]"
            );
        }
        parsed
    });
    let _ = PLAN.set(plan);
}

fn parse(spec: &str) -> Option<Plan> {
    let (point, rest) = spec.rsplit_once(':')?;
    let (action, nth) = match rest.split_once('@') {
        Some((a, n)) => (a, n.parse().ok().filter(|n| *n > 0)?),
        None => (rest, 1),
    };
    let action = match action {
        "kill" => Action::Kill,
        "stop" => Action::Stop,
        "panic" => Action::Panic,
        _ => return None,
    };
    (!point.is_empty()).then(|| Plan {
        point: point.to_owned(),
        action,
        nth,
        seen: AtomicU64::new(0),
    })
}

/// Marks the moment `name`: if the test asked for a fault here, it happens now.
pub fn point(name: &str) {
    let Some(Some(plan)) = PLAN.get() else {
        return;
    };
    if plan.point != name || plan.seen.fetch_add(1, Ordering::SeqCst) + 1 != plan.nth {
        return;
    }
    let signal = match plan.action {
        Action::Kill => nix::sys::signal::Signal::SIGKILL,
        Action::Stop => nix::sys::signal::Signal::SIGSTOP,
        Action::Panic => panic!("fault point {name}"),
    };
    let _ = nix::sys::signal::raise(signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_are_refused() {
        let p = parse("lock.after_mkdir:kill").unwrap();
        assert_eq!(
            (p.point.as_str(), p.action, p.nth),
            ("lock.after_mkdir", Action::Kill, 1)
        );
        let p = parse("a.b:stop@3").unwrap();
        assert_eq!((p.action, p.nth), (Action::Stop, 3));
        assert_eq!(parse("a.b:panic").unwrap().action, Action::Panic);
        for bad in ["", "a.b", ":kill", "a.b:pause", "a.b:kill@0", "a.b:kill@x"] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
