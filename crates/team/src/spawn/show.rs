//! Showing a team's window to a person while something runs, and no longer once it is done.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::spawn::layout::session_name;
use crate::spawn::window::TeamWindow;
use swarm_tmux::{Caller, is_server_path};
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;

/// Shows the team's window while `work` runs, and stops when it returns. Inside tmux on
/// this very server the caller's client switches to it; when the window is in the
/// team's own session, that session is first told to hand its clients to another
/// session when it ends, so closing it never throws the person out of tmux. Anywhere
/// else (outside tmux, or inside another server, where `switch-client` has no client to
/// switch) a client is attached in the foreground on the caller's terminal and
/// detached when `work` returns, so nobody is left looking at a finished team's panes.
/// A person may detach before; `work` goes on. `hint`, if any, is shown in the status line
/// of a session that is the team's own, where a line printed before tmux took the
/// terminal cannot be seen. Inside tmux on a server no client is attached to (a session a
/// script or CI started), there is nobody to show it to: `note` is told so and `work` runs
/// unshown, as without a terminal.
pub fn show_while<T>(
    window: &TeamWindow,
    caller: &Caller,
    hint: Option<&str>,
    note: &dyn Fn(&str),
    work: impl FnOnce() -> T,
) -> Result<T> {
    let panes = window.panes()?;
    let target = panes
        .iter()
        .find(|p| p.agent.as_deref() == Some(LEAD))
        .or(panes.first())
        .ok_or_else(|| {
            Error::not_found(format!(
                "team '{}' has no tmux window to show",
                window.team()
            ))
        })?
        .pane;
    let session = panes
        .iter()
        .find(|p| p.pane == target)
        .map_or(window.session(), |p| p.session);
    let own =
        window.tmux().display(&session, "#{session_name}")?.trim() == session_name(window.team());
    if let Some(hint) = hint.filter(|_| own) {
        let tmux = window.tmux();
        let shown = format!(" {} ", hint.replace('#', "##"));
        tmux.set_session_option(session, "status-right-length", &shown.len().to_string())?;
        tmux.set_session_option(session, "status-right", &shown)?;
    }
    let here = caller
        .socket
        .as_deref()
        .is_some_and(|s| is_server_path(window.tmux(), s));
    if here {
        if own {
            window
                .tmux()
                .set_session_option(session, "detach-on-destroy", "off")?;
        }
        match window.tmux().attach(&target, true) {
            Err(e) if e.is_no_client() => note(
                "no tmux client is attached to this server to show the team window to; going on without showing it, as with --no-attach",
            ),
            r => r?,
        }
        return Ok(work());
    }
    let mut client = window
        .tmux()
        .attach_command(&target)
        .spawn()
        .map_err(|e| Error::Pane(format!("failed to run tmux attach-session: {e}")))?;
    let out = work();
    if let Err(e) = window.tmux().detach_clients(session)
        && !(e.is_absent() || e.is_target_gone())
    {
        tracing::warn!(
            "failed to detach from the window of team '{}': {e}",
            window.team()
        );
    }
    // It goes with the detach; one that does not is not left behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    while matches!(client.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if matches!(client.try_wait(), Ok(None)) {
        let _ = client.kill();
    }
    let _ = client.wait();
    Ok(out)
}
