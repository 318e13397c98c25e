//! What tmux reports about panes and sessions: [`PaneRecord`], parsed by [`parse_panes`]
//! from one batched `list-panes -F` query; [`SessionRecord`]; and [`NewPane`], the ids of
//! a freshly created pane. Also the pane options swarm tags its panes with ([`TEAM_OPTION`], [`AGENT_OPTION`], [`PANE_OPTION`]).
//!
//! Invariants: the query (`pane_format`) and the parser agree on `PANE_FIELDS` fields in
//! one order, separated by `SEP`; free-text fields pass through `sanitized`, so neither a
//! separator nor a newline inside them can shift a field or split a record. A pane's team
//! and agent tags count only when its `@swarm-pane` option names the pane itself, so tags
//! inherited from its window, session or the global options never make a pane look like
//! swarm's.

use std::str::FromStr;

use crate::escape::{SEP, sanitized};
use crate::ids::{InvalidId, PaneId, SessionId, WindowId};

/// Pane option: the team a pane belongs to.
pub const TEAM_OPTION: &str = "@swarm-team";
/// Pane option: the agent running in a pane.
pub const AGENT_OPTION: &str = "@swarm-agent";
/// Pane option: the pane's own id, proof that the two tags above were set on this pane and
/// not inherited from its window, session or the global options.
pub const PANE_OPTION: &str = "@swarm-pane";

/// One pane, as reported by the batched [`Tmux::list_panes`].
///
/// [`Tmux::list_panes`]: crate::Tmux::list_panes
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRecord {
    pub pane: PaneId,
    /// Position in its window; changes when other panes go. Display only.
    pub index: u32,
    /// The pane's first process (still reported after it died).
    pub pid: i32,
    /// The process exited and the pane stayed (`remain-on-exit`).
    pub dead: bool,
    /// Exit code of a dead pane's process, if it exited normally. This can lag `dead` by a
    /// moment (tmux sees the pty close before it reaps the process): `dead` with neither
    /// status nor signal means "not known yet", so look again.
    pub dead_status: Option<i32>,
    /// Signal that killed a dead pane's process (same lag as `dead_status`).
    pub dead_signal: Option<i32>,
    pub width: u16,
    pub height: u16,
    pub left: u16,
    pub top: u16,
    pub window: WindowId,
    pub session: SessionId,
    /// The tmux server's process id.
    pub server_pid: i32,
    pub session_name: String,
    pub title: String,
    pub current_command: String,
    /// `@swarm-team`, only when `@swarm-pane` names this pane (see the module notes). That
    /// rules out inherited tags, not a window option someone set to this very pane's id;
    /// destructive callers check [`Tmux::own_pane_options`] as well.
    ///
    /// [`Tmux::own_pane_options`]: crate::Tmux::own_pane_options
    pub team: Option<String>,
    /// `@swarm-agent`, only when set on this pane itself.
    pub agent: Option<String>,
}

impl PaneRecord {
    /// True if swarm tagged this pane as one of `team`'s.
    pub fn belongs_to(&self, team: &str) -> bool {
        self.team.as_deref() == Some(team)
    }
}

/// The fields of [`PaneRecord`] in query order; free text comes through [`sanitized`].
pub(super) fn pane_format() -> String {
    let fields: Vec<String> = [
        "pane_id",
        "pane_index",
        "pane_pid",
        "pane_dead",
        "pane_dead_status",
        "pane_dead_signal",
        "pane_width",
        "pane_height",
        "pane_left",
        "pane_top",
        "window_id",
        "session_id",
        "pid",
    ]
    .iter()
    .map(|f| format!("#{{{f}}}"))
    .chain(
        [
            PANE_OPTION,
            TEAM_OPTION,
            AGENT_OPTION,
            "session_name",
            "pane_title",
            "pane_current_command",
        ]
        .iter()
        .map(|f| sanitized(f)),
    )
    .collect();
    fields.join(&SEP.to_string())
}

const PANE_FIELDS: usize = 19;

/// Parses `list-panes -F pane_format()` output.
pub fn parse_panes(output: &str) -> Result<Vec<PaneRecord>, String> {
    output
        .lines()
        .filter(|l| !l.is_empty())
        .map(parse_pane)
        .collect()
}

fn parse_pane(line: &str) -> Result<PaneRecord, String> {
    let f: Vec<&str> = line.split(SEP).collect();
    if f.len() != PANE_FIELDS {
        return Err(format!(
            "expected {PANE_FIELDS} fields, got {} in {line:?}",
            f.len()
        ));
    }
    fn num<T: FromStr>(s: &str, what: &str) -> Result<T, String> {
        s.parse().map_err(|_| format!("bad {what} {s:?}"))
    }
    fn opt_num(s: &str, what: &str) -> Result<Option<i32>, String> {
        if s.is_empty() {
            Ok(None)
        } else {
            num(s, what).map(Some)
        }
    }
    let pane: PaneId = f[0].parse().map_err(|e: InvalidId| e.to_string())?;
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let own = f[13] == pane.to_string();
    Ok(PaneRecord {
        pane,
        index: num(f[1], "pane_index")?,
        pid: num(f[2], "pane_pid")?,
        dead: f[3] == "1",
        dead_status: opt_num(f[4], "pane_dead_status")?,
        dead_signal: opt_num(f[5], "pane_dead_signal")?,
        width: num(f[6], "pane_width")?,
        height: num(f[7], "pane_height")?,
        left: num(f[8], "pane_left")?,
        top: num(f[9], "pane_top")?,
        window: f[10].parse().map_err(|e: InvalidId| e.to_string())?,
        session: f[11].parse().map_err(|e: InvalidId| e.to_string())?,
        server_pid: num(f[12], "pid")?,
        team: if own { opt(f[14]) } else { None },
        agent: if own { opt(f[15]) } else { None },
        session_name: f[16].to_owned(),
        title: f[17].to_owned(),
        current_command: f[18].to_owned(),
    })
}

/// A session: its id and its name as tmux stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: SessionId,
    pub name: String,
}

/// The ids of a freshly created session or window and its only pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewPane {
    pub session: SessionId,
    pub window: WindowId,
    pub pane: PaneId,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &[&str]) -> String {
        fields.join(&SEP.to_string())
    }

    #[test]
    fn parses_pane_records() {
        let out = [
            line(&[
                "%3", "1", "4242", "1", "3", "", "60", "50", "0", "0", "@1", "$0", "77", "%3", "t",
                "alice", "swarm-t", "alice", "python3",
            ]),
            line(&[
                "%4", "2", "4243", "1", "", "9", "139", "24", "61", "0", "@1", "$0", "77", "", "",
                "", "swarm-t", "vm", "sleep",
            ]),
            // Tags inherited from the window (no @swarm-pane of its own) do not count.
            line(&[
                "%5", "0", "4244", "0", "", "", "80", "24", "0", "0", "@2", "$1", "77", "%3", "t",
                "bob", "user", "", "bash",
            ]),
        ]
        .join("\n")
            + "\n";
        let panes = parse_panes(&out).unwrap();
        assert_eq!(panes.len(), 3);
        let a = &panes[0];
        assert_eq!(a.pane, PaneId(3));
        assert_eq!(
            (a.pid, a.dead, a.dead_status, a.dead_signal),
            (4242, true, Some(3), None)
        );
        assert_eq!((a.width, a.height, a.left, a.top), (60, 50, 0, 0));
        assert_eq!((a.window, a.session), (WindowId(1), SessionId(0)));
        assert_eq!(a.server_pid, 77);
        assert_eq!(a.team.as_deref(), Some("t"));
        assert_eq!(a.agent.as_deref(), Some("alice"));
        assert!(a.belongs_to("t"));
        let b = &panes[1];
        assert_eq!((b.dead_status, b.dead_signal), (None, Some(9)));
        assert_eq!((b.team.as_deref(), b.agent.as_deref()), (None, None));
        let c = &panes[2];
        assert!(!c.belongs_to("t"));
        assert_eq!(c.title, "");
    }

    #[test]
    fn rejects_malformed_pane_lines() {
        assert!(parse_panes("%1\x1f2\n").is_err());
        let mut fields = vec!["x"; PANE_FIELDS];
        fields[0] = "%1";
        assert!(parse_panes(&line(&fields)).is_err());
        assert_eq!(parse_panes("").unwrap(), vec![]);
    }

    #[test]
    fn pane_format_has_one_field_per_record_field() {
        // Each of the six sanitised fields also has the separator inside its regex.
        assert_eq!(pane_format().split(SEP).count(), PANE_FIELDS + 6);
        assert!(pane_format().contains("#{s/[\x1f\n]/_/:pane_current_command}"));
    }
}
