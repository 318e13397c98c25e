//! How a command's text looks on this terminal, decided once at the edge: colour only when
//! stdout is a terminal and `NO_COLOR` is unset or empty (no-color.org), and the terminal's
//! width so tables fit it. A pipe gets plain text of any width. The [`Look`] is passed down
//! to whatever draws.

use std::io::IsTerminal;
use swarm_util::vars;

pub use swarm_util::table::Look;

/// The look of text printed to stdout now.
pub fn stdout() -> Look {
    let terminal = std::io::stdout().is_terminal();
    let no_color = std::env::var_os(vars::NO_COLOR).is_some_and(|v| !v.is_empty());
    Look {
        colour: terminal && !no_color,
        width: terminal
            .then(|| ratatui::crossterm::terminal::size().ok())
            .flatten()
            .map(|(w, _)| usize::from(w))
            .filter(|w| *w > 0),
    }
}
