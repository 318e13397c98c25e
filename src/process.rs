//! Facts about other processes: is a pid alive, signal it or its group.

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// True if a process with this pid exists (it may be a zombie or someone else's).
pub fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match kill(Pid::from_raw(pid), None) {
        Ok(()) => !is_zombie(pid),
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Sends `signal` to the process group `pgid`; false if there is no such group.
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
    pgid > 0 && killpg(Pid::from_raw(pgid), signal).is_ok()
}

pub fn signal(pid: i32, signal: Signal) -> bool {
    pid > 0 && kill(Pid::from_raw(pid), signal).is_ok()
}

/// The process group of `pid`, if it exists.
pub fn pgid_of(pid: i32) -> Option<i32> {
    nix::unistd::getpgid(Some(Pid::from_raw(pid)))
        .ok()
        .map(|p| p.as_raw())
}

/// The start time of `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`):
/// together with the pid it names one process, even after the pid is reused.
pub fn start_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}
