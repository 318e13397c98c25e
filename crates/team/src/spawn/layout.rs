//! Where a team's panes go, decided from one listing of the server: which window has room
//! and which pane to split there, the window's layout, the names of its windows and
//! session, and the colour of a pane's border.
//!
//! Pure functions of the pane records: nothing here talks to tmux, so the decisions are
//! tested without a server, and a dry run makes the same ones a real spawn does.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use swarm_store::roster::{PALETTE, tmux_colour};
use swarm_tmux::{Direction, Layout, PaneId, PaneRecord, SessionId, WindowId};
use swarm_util::error::Base as _;
use swarm_util::names::{LEAD, TeamName};

/// The tmux session name of a team whose window opened detached.
pub fn session_name(team: &TeamName) -> String {
    format!("swarm-{team}")
}

/// The name of a team's `ordinal`-th window (1-based); names are for people, ids for code.
pub fn window_name(team: &TeamName, ordinal: usize) -> String {
    if ordinal <= 1 {
        format!("swarm-{team}")
    } else {
        format!("swarm-{team}-{ordinal}")
    }
}

/// The session of the team's lead pane, else of its lowest pane.
pub fn home_session(all: &[PaneRecord], team: &TeamName) -> Option<SessionId> {
    let mine = all.iter().filter(|p| p.belongs_to(team.as_str()));
    mine.clone()
        .find(|p| p.agent.as_deref() == Some(LEAD))
        .or_else(|| mine.min_by_key(|p| p.pane))
        .map(|p| p.session)
}

/// A tmux colour for a palette name (Claude Code's mapping) or a tmux colour name, checked
/// so it cannot break out of the `#[fg=…]` style it is put in.
pub fn border_colour(colour: &str) -> Result<&str> {
    let c = tmux_colour(colour);
    if !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'#') {
        Ok(c)
    } else {
        Err(Error::usage(format!(
            "invalid pane colour {colour:?}: use one of {} or a tmux colour name",
            PALETTE.join(", ")
        )))
    }
}

/// The size and position of one pane, for picking which pane to split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneGeometry {
    pub pane: PaneId,
    pub width: u16,
    pub height: u16,
}

/// One window holding team panes: every pane in it (a user's too, since they take room).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowLoad {
    pub window: WindowId,
    pub panes: Vec<PaneGeometry>,
    pub has_lead: bool,
}

/// The windows that hold at least one of `team`'s panes, the lead's first, then by id
/// (creation order).
pub fn team_windows(all: &[PaneRecord], team: &str) -> Vec<WindowLoad> {
    let mut by_window: BTreeMap<WindowId, WindowLoad> = BTreeMap::new();
    for p in all.iter().filter(|p| p.belongs_to(team)) {
        by_window.entry(p.window).or_insert_with(|| WindowLoad {
            window: p.window,
            panes: Vec::new(),
            has_lead: false,
        });
    }
    for p in all {
        if let Some(w) = by_window.get_mut(&p.window) {
            w.panes.push(PaneGeometry {
                pane: p.pane,
                width: p.width,
                height: p.height,
            });
            w.has_lead |= p.belongs_to(team) && p.agent.as_deref() == Some(LEAD);
        }
    }
    let mut windows: Vec<WindowLoad> = by_window.into_values().collect();
    windows.sort_by_key(|w| (!w.has_lead, w.window));
    windows
}

/// Where the next pane goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Split `target` in `window`.
    Split {
        window: WindowId,
        target: PaneId,
        direction: Direction,
    },
    /// Every window is full: open another.
    NewWindow,
}

/// The first window with fewer than `per_window` panes; in it, the largest pane, split
/// across its longer side (a cell is about twice as tall as wide).
pub fn choose_slot(windows: &[WindowLoad], per_window: usize) -> Slot {
    let per_window = per_window.max(1);
    for w in windows {
        if w.panes.len() >= per_window {
            continue;
        }
        let Some(big) = w.panes.iter().max_by_key(|p| {
            (
                u32::from(p.width) * u32::from(p.height),
                std::cmp::Reverse(p.pane),
            )
        }) else {
            continue;
        };
        let direction = if big.width >= big.height.saturating_mul(2) {
            Direction::Horizontal
        } else {
            Direction::Vertical
        };
        return Slot::Split {
            window: w.window,
            target: big.pane,
            direction,
        };
    }
    Slot::NewWindow
}

/// The layout of a window with `panes` panes: nothing to arrange for one; `main-vertical`
/// while the lead's window has at most `main_vertical_max` teammates; otherwise `tiled`.
pub fn layout_for(has_lead: bool, panes: usize, main_vertical_max: usize) -> Option<Layout> {
    match panes {
        0 | 1 => None,
        n if has_lead && n - 1 <= main_vertical_max => Some(Layout::MainVertical),
        _ => Some(Layout::Tiled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(id: u32, width: u16, height: u16) -> PaneGeometry {
        PaneGeometry {
            pane: format!("%{id}").parse().unwrap(),
            width,
            height,
        }
    }

    fn window(id: u32, panes: Vec<PaneGeometry>, has_lead: bool) -> WindowLoad {
        WindowLoad {
            window: format!("@{id}").parse().unwrap(),
            panes,
            has_lead,
        }
    }

    #[test]
    fn layout_is_main_vertical_beside_the_lead_then_tiled() {
        assert_eq!(layout_for(true, 1, 4), None);
        assert_eq!(layout_for(true, 2, 4), Some(Layout::MainVertical));
        assert_eq!(layout_for(true, 5, 4), Some(Layout::MainVertical));
        assert_eq!(layout_for(true, 6, 4), Some(Layout::Tiled));
        assert_eq!(layout_for(false, 2, 4), Some(Layout::Tiled));
        assert_eq!(layout_for(false, 0, 4), None);
    }

    #[test]
    fn the_lone_lead_is_split_beside_itself() {
        let w = vec![window(0, vec![geom(0, 200, 50)], true)];
        assert_eq!(
            choose_slot(&w, 6),
            Slot::Split {
                window: "@0".parse().unwrap(),
                target: "%0".parse().unwrap(),
                direction: Direction::Horizontal
            }
        );
    }

    #[test]
    fn the_largest_pane_is_split_across_its_longer_side() {
        let w = vec![window(
            0,
            vec![geom(0, 60, 50), geom(1, 139, 25), geom(2, 139, 24)],
            true,
        )];
        assert_eq!(
            choose_slot(&w, 6),
            Slot::Split {
                window: "@0".parse().unwrap(),
                target: "%1".parse().unwrap(),
                direction: Direction::Horizontal
            }
        );
        let w = vec![window(0, vec![geom(0, 60, 50), geom(1, 40, 50)], true)];
        assert!(matches!(
            choose_slot(&w, 6),
            Slot::Split { target, direction: Direction::Vertical, .. } if target.to_string() == "%0"
        ));
    }

    #[test]
    fn full_windows_overflow_in_order() {
        let full = |id, lead| {
            window(
                id,
                (0..6).map(|i| geom(id * 10 + i, 30, 10)).collect(),
                lead,
            )
        };
        assert_eq!(choose_slot(&[full(0, true)], 6), Slot::NewWindow);
        let w = vec![full(0, true), window(3, vec![geom(40, 200, 50)], false)];
        assert!(matches!(
            choose_slot(&w, 6),
            Slot::Split { window, .. } if window.to_string() == "@3"
        ));
        // A pane closed in the first window makes room there again, before later windows.
        let mut first = full(0, true);
        first.panes.pop();
        let w = vec![first, window(3, vec![geom(40, 200, 50)], false)];
        assert!(matches!(
            choose_slot(&w, 6),
            Slot::Split { window, .. } if window.to_string() == "@0"
        ));
        assert_eq!(choose_slot(&[], 6), Slot::NewWindow);
    }

    #[test]
    fn colours_map_to_tmux_and_cannot_inject_styles() {
        assert_eq!(border_colour("purple").unwrap(), "magenta");
        assert_eq!(border_colour("orange").unwrap(), "colour208");
        assert_eq!(border_colour("blue").unwrap(), "blue");
        assert_eq!(border_colour("#ff0000").unwrap(), "#ff0000");
        assert!(border_colour("red,bold]").is_err());
        assert!(border_colour("").is_err());
    }

    #[test]
    fn names_follow_the_team() {
        let t = TeamName::new("alpha").unwrap();
        assert_eq!(session_name(&t), "swarm-alpha");
        assert_eq!(window_name(&t, 1), "swarm-alpha");
        assert_eq!(window_name(&t, 2), "swarm-alpha-2");
    }
}
