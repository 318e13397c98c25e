//! What every panel of the dashboard shares: the styles (dim text, bold, column headers,
//! the selected row, the focus mark), the colour of a member state and of a roster palette
//! name, and [`Ctx`], the context a panel draws with: the snapshot, the UI state, whether
//! the panel has the focus, and whether the layout is compact.
//!
//! Invariants: `Ctx` decides a panel's chrome, so every panel looks alike: a rounded box in
//! the wide layout and a one-line title rule when compact, cyan and bold when focused; a list
//! panel's header row shows only when not compact, and its selected row is highlighted (and
//! marked with [`MARK`]) only when focused. Nothing here reads anything but its arguments.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, HighlightSpacing, Row, Table, TableState};

use crate::ui::dashboard::model::Snapshot;
use crate::ui::dashboard::ui::UiState;

pub(super) const DIM: Style = Style::new().fg(Color::DarkGray);
pub(super) const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
pub(super) const HEADER: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::BOLD);
pub(super) const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
pub(super) const MARK: &str = "▸";

/// What a panel draws with; [`Ctx::block`] and [`Ctx::render_table`] give it its chrome.
pub(super) struct Ctx<'a> {
    pub(super) snap: &'a Snapshot,
    pub(super) ui: &'a UiState,
    pub(super) focused: bool,
    pub(super) compact: bool,
}

impl Ctx<'_> {
    pub(super) fn block<'t>(&self, title: Line<'t>) -> Block<'t> {
        let border = if self.focused {
            Style::new().fg(Color::Cyan)
        } else {
            DIM
        };
        let title = if self.focused {
            title.patch_style(BOLD)
        } else {
            title
        };
        let block = Block::new()
            .title(title)
            .border_style(border)
            .border_type(BorderType::Rounded);
        if self.compact {
            block.borders(Borders::TOP)
        } else {
            block.borders(Borders::ALL)
        }
    }

    fn mark(&self) -> &'static str {
        if self.focused { MARK } else { " " }
    }

    /// A list pane: highlight follows focus, the header hides when compact.
    pub(super) fn render_table<'t, C: Into<Constraint>>(
        &self,
        frame: &mut Frame,
        area: Rect,
        table: (
            Block<'t>,
            Row<'t>,
            Vec<Row<'t>>,
            impl IntoIterator<Item = C>,
        ),
        selected: Option<usize>,
    ) {
        let (block, header, rows, widths) = table;
        let mut table = Table::new(rows, widths)
            .block(block)
            .row_highlight_style(if self.focused { SELECTED } else { Style::new() })
            .highlight_symbol(self.mark())
            .highlight_spacing(HighlightSpacing::Always);
        if !self.compact {
            table = table.header(header.style(HEADER));
        }
        let mut state = TableState::new().with_selected(selected);
        frame.render_stateful_widget(table, area, &mut state);
    }
}

pub(super) fn state_style(state: &str) -> Style {
    match state {
        "working" | "running" => Style::new().fg(Color::Green),
        "awaiting-approval" => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        "shutting-down" | "unseen" => Style::new().fg(Color::Yellow),
        "starting" => Style::new().fg(Color::Cyan),
        "dead" => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        "exited" => Style::new().fg(Color::Red),
        "not-started" => DIM,
        _ => Style::new(),
    }
}

/// The terminal colour of a palette name (Claude Code's palette, as in the pane borders).
pub fn palette(name: Option<&str>) -> Color {
    match name {
        Some("red") => Color::Red,
        Some("blue") => Color::Blue,
        Some("green") => Color::Green,
        Some("yellow") => Color::Yellow,
        Some("purple") => Color::Magenta,
        Some("orange") => Color::Indexed(208),
        Some("pink") => Color::Indexed(205),
        Some("cyan") => Color::Cyan,
        _ => Color::Gray,
    }
}
