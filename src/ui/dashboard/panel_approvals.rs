//! The approvals panel: the queue of pending requests from teammates (plans to approve,
//! permissions to grant), one row each: kind (`plan` or `perm`), the agent in its roster
//! colour, the request's summary, and its age. Drawn the same in both layouts (see
//! [`Ctx`]); resolving a request is the app's job, not the view's.
//!
//! Invariants: rows are in the snapshot's order, so the selection the UI state keeps
//! (`UiState::selected_approval`) indexes them directly; with anything pending the title
//! is bold yellow with the count, and with nothing pending it says "none pending" and the
//! panel stays empty.

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row};

use crate::ui::dashboard::model::Snapshot;
use crate::ui::dashboard::style::{Ctx, DIM, palette};
use swarm_store::approvals::{Approval, Kind};
use swarm_team::life::status;

pub(super) fn draw_approvals(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let snap = ctx.snap;
    let n = snap.approvals.len();
    let title = if n == 0 {
        Line::from(vec![
            Span::raw(" Approvals"),
            Span::styled(" · none pending ", DIM),
        ])
    } else {
        Line::from(Span::styled(
            format!(" Approvals · {n} pending "),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ))
    };
    let block = ctx.block(title);
    if n == 0 {
        frame.render_widget(block, area);
        return;
    }
    let agent_w = snap
        .approvals
        .iter()
        .map(|a| a.agent.chars().count() as u16)
        .max()
        .unwrap_or(5)
        .clamp(5, 14);
    let widths = [
        Constraint::Length(4),
        Constraint::Length(agent_w),
        Constraint::Fill(1),
        Constraint::Length(7),
    ];
    let rows: Vec<Row> = snap
        .approvals
        .iter()
        .map(|a| approval_row(snap, a))
        .collect();
    let header = Row::new([
        Cell::from("KIND"),
        Cell::from("AGENT"),
        Cell::from("REQUEST"),
        Cell::from(Line::from("AGE").alignment(Alignment::Right)),
    ]);
    ctx.render_table(
        frame,
        area,
        (block, header, rows, widths),
        ctx.ui.selected_approval(snap),
    );
}

fn approval_row<'a>(snap: &Snapshot, a: &'a Approval) -> Row<'a> {
    let kind = match a.kind {
        Kind::Plan => "plan",
        Kind::Permission => "perm",
    };
    Row::new(vec![
        Cell::from(Span::styled(kind, Style::new().fg(Color::Magenta))),
        Cell::from(Span::styled(
            a.agent.as_str(),
            Style::new().fg(palette(snap.colour_of(&a.agent))),
        )),
        Cell::from(a.summary.as_str()),
        Cell::from(Line::from(status::ago(a.created_ms, snap.now_ms)).alignment(Alignment::Right)),
    ])
}
