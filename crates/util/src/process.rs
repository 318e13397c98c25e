//! Facts about other processes: is a pid alive, signal it, its group or its session, and
//! end what a dead one left running; and a child's output within a time limit.

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

/// True if `pid` is alive and, when `start` is given, is the process that started then
/// (see [`start_ticks`]): a reused pid is not it. One read of `/proc/<pid>/stat`, for a
/// supervisor asking about a whole team twice a second.
pub fn is_alive_since(pid: i32, start: Option<u64>) -> bool {
    if pid <= 0 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        // Gone, or hidden from us (`hidepid`): then only a signal can tell, not when.
        return start.is_none() && is_alive(pid);
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap_or("Z");
    if state.starts_with('Z') || state.starts_with('X') {
        return false;
    }
    start.is_none_or(|want| fields.nth(18).and_then(|t| t.parse().ok()) == Some(want))
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

/// The session id of `pid` (field 6 of `/proc/<pid>/stat`).
pub fn session_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(3)?.parse().ok()
}

/// Every process in session `sid`: a pane's agent and everything it started, including
/// commands that moved to process groups of their own.
pub fn session_members(sid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| session_of(pid) == Some(sid) && !is_zombie(pid))
        .collect()
}

/// Sends `signal` to every process of session `sid`; returns how many it reached.
pub fn signal_session(sid: i32, signal: Signal) -> usize {
    if sid <= 1 {
        return 0;
    }
    session_members(sid)
        .into_iter()
        .filter(|&pid| self::signal(pid, signal))
        .count()
}

/// Ends what a dead process left running in the session it led (a pane's process leads
/// one): the commands it started, each in a process group of its own. `pid` and
/// `start_ticks` name the dead process, as its state file recorded them. Nothing is done
/// while it is alive, when its start time is unknown, or when another process now has its
/// pid (the kernel hands out a session's id again only once nothing is left in it, so then
/// the session is someone else's). Returns how many processes were killed.
pub fn end_leftovers(pid: i32, start_ticks: Option<u64>) -> usize {
    let Some(started) = start_ticks else {
        return 0;
    };
    if pid <= 1 {
        return 0;
    }
    match self::start_ticks(pid) {
        // Still there: a zombie of it has left its session to end; anything else is it,
        // alive, or a new process with its pid.
        Some(t) if t == started && is_zombie(pid) => {}
        Some(_) => return 0,
        None => {}
    }
    session_members(pid)
        .into_iter()
        .filter(|&p| p != pid && self::start_ticks(p).is_some_and(|t| t >= started))
        .filter(|&p| signal(p, Signal::SIGKILL))
        .count()
}

/// How [`run_within`] failed.
#[derive(Debug)]
pub enum RunFailed {
    /// It could not be started.
    Spawn(std::io::Error),
    /// It took longer than its limit: it was killed and reaped.
    TimedOut,
    /// Waiting for it failed.
    Wait(std::io::Error),
}

/// Runs `cmd` with `input` written to its stdin (without input it gets none), its output
/// collected within `limit`: a command still running then is killed and reaped, and one
/// that left something holding its pipes open counts as still running. A command that
/// does not read its input fails in its own way, which its output says.
pub fn run_within(
    cmd: &mut std::process::Command,
    input: Option<&[u8]>,
    limit: std::time::Duration,
) -> Result<std::process::Output, RunFailed> {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunFailed::Spawn)?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = std::io::Write::write_all(&mut stdin, bytes);
    }
    output_within(child, limit).map_err(|e| e.map_or(RunFailed::TimedOut, RunFailed::Wait))
}

/// Collects `child`'s output, killing it if it takes longer than `limit` (`Err(None)`);
/// `Err(Some(e))` when waiting for it failed. Threads read its pipes to their end, which
/// comes when it exits (or closes them, just before); this thread keeps the `Child`, so
/// the kill can only reach it while it is unreaped: std never signals a child it has
/// already waited for, and no other thread waits for this one, so a reused pid is never
/// hit. A child that left something holding its pipes open counts as not done.
fn output_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> Result<std::process::Output, Option<std::io::Error>> {
    use std::sync::mpsc;
    fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
        let (tx, rx) = mpsc::sync_channel(1);
        if let Some(mut pipe) = pipe {
            let _ = std::thread::Builder::new()
                .name("child-output".to_owned())
                .spawn(move || {
                    let mut bytes = Vec::new();
                    let _ = pipe.read_to_end(&mut bytes);
                    let _ = tx.send(bytes);
                });
        } else {
            let _ = tx.send(Vec::new());
        }
        rx
    }
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = std::time::Instant::now() + limit;
    let left = || deadline.saturating_duration_since(std::time::Instant::now());
    let out = stdout.recv_timeout(left()).ok();
    let err = out.as_ref().and_then(|_| stderr.recv_timeout(left()).ok());
    let (Some(stdout), Some(stderr)) = (out, err) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(None);
    };
    let status = child.wait().map_err(Some)?;
    Ok(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn(args: &[&str]) -> std::process::Child {
        std::process::Command::new(args[0])
            .args(&args[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_command_that_ends_in_time_gives_its_output_and_status() {
        let child = spawn(&["sh", "-c", "echo out; echo err >&2; exit 3"]);
        let output = output_within(child, std::time::Duration::from_secs(30)).unwrap();
        assert_eq!(output.stdout, b"out\n");
        assert_eq!(output.stderr, b"err\n");
        assert_eq!(output.status.code(), Some(3));
    }

    #[test]
    fn a_command_that_hangs_is_killed_and_reaped() {
        let child = spawn(&["sleep", "30"]);
        let pid = child.id() as i32;
        let started = std::time::Instant::now();
        assert!(matches!(
            output_within(child, std::time::Duration::from_millis(200)),
            Err(None)
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert!(!is_alive(pid), "left running");
        // Reaped: no zombie of ours is left under that pid.
        assert!(std::fs::read_to_string(format!("/proc/{pid}/stat")).is_err());
    }

    #[test]
    fn alive_since_knows_a_process_by_its_start() {
        let me = std::process::id() as i32;
        let start = start_ticks(me);
        assert!(start.is_some());
        assert!(is_alive_since(me, start));
        assert!(is_alive_since(me, None));
        assert!(!is_alive_since(me, start.map(|t| t + 1)), "a reused pid");
        assert!(!is_alive_since(0, None));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!is_alive_since(pid, None), "reaped");
        // A zombie is not alive.
        let zombie = std::process::Command::new("true").spawn().unwrap();
        let zpid = zombie.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while is_alive(zpid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!is_alive_since(zpid, None));
        drop(zombie);
    }
}
