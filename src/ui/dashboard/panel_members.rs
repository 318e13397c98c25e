//! The members panel: one row per member of the team, with the member's roster colour, name,
//! state (coloured by what it means), and what it is doing: its current task, else its
//! status detail. More columns as the width inside the panel allows: from 56, how long ago
//! it was last active; from 96, tokens in/out and cost. One function for both layouts: the
//! layout decides only the chrome and the header row (see [`Ctx`]), the width the columns.
//!
//! Invariants: a name or a task/detail too long for its column ends in "…"; a dead or
//! exited member shows why it stopped, in red, in place of its task
//! ("no reason recorded" if nothing was); below 96 columns long state names are shortened
//! (`awaiting`, `stopping`, `not started`) so the state column can be narrower.

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row};

use crate::ui::dashboard::model::Snapshot;
use crate::ui::dashboard::style::{Ctx, DIM, palette, state_style};
use swarm_team::life::status::{self, MemberStatus};
use swarm_util::table::fit;

pub(super) fn draw_members(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let snap = ctx.snap;
    let block = ctx.block(Line::from(format!(" Members ({}) ", snap.members.len())));
    let inner = block.inner(area).width;
    // Columns by the width available: all from 96, the essentials below.
    let full = inner >= 96;
    let mid = inner >= 56;
    let short = !full;
    let name_w = snap
        .members
        .iter()
        .map(|m| m.name.chars().count() as u16 + 2)
        .max()
        .unwrap_or(6)
        .clamp(8, if full { 20 } else { 14 });
    let mut widths = vec![
        Constraint::Length(name_w),
        Constraint::Length(if short { 11 } else { 17 }),
        Constraint::Fill(1),
    ];
    let mut header = vec![
        Cell::from("MEMBER"),
        Cell::from("STATE"),
        Cell::from("TASK / DETAIL"),
    ];
    // Only a mixed team needs telling which member runs what.
    let engines = mid
        && snap
            .members
            .iter()
            .any(|m| !matches!(m.engine.as_str(), "swarm" | "unknown"));
    if engines {
        widths.push(Constraint::Length(8));
        header.push(Cell::from("ENGINE"));
    }
    // Nor does a team on one machine need telling where each member runs.
    let hosts = mid
        && snap
            .members
            .iter()
            .any(|m| !swarm_store::liveness::is_here(m.host.as_deref()));
    if hosts {
        widths.push(Constraint::Length(HOST_WIDTH as u16));
        header.push(Cell::from("HOST"));
    }
    if mid {
        widths.push(Constraint::Length(8));
        header.push(Cell::from("ACTIVE"));
    }
    if full {
        widths.extend([Constraint::Length(13), Constraint::Length(8)]);
        header.extend(
            ["TOKENS in/out", "COST"]
                .map(|h| Cell::from(Line::from(h).alignment(Alignment::Right))),
        );
    }
    // What the Fill column gets (ratatui's one-column spacing, the selection mark's
    // column), so a cut name or detail can end in "…" rather than stop mid-word.
    let fixed: u16 = widths
        .iter()
        .map(|c| match c {
            Constraint::Length(n) => *n,
            _ => 0,
        })
        .sum();
    let fits = Fits {
        name: usize::from(name_w.saturating_sub(2)),
        doing: usize::from(inner.saturating_sub(fixed + widths.len() as u16)),
    };
    let rows: Vec<Row> = snap
        .members
        .iter()
        .map(|m| {
            let mut row = member_row(snap, m, short, mid, full, fits);
            if engines {
                row.insert(3, Cell::from(Span::styled(m.engine.as_str(), DIM)));
            }
            if hosts {
                let host = fit(m.host.as_deref().unwrap_or("-"), HOST_WIDTH - 1);
                row.insert(
                    3 + usize::from(engines),
                    Cell::from(Span::styled(host, DIM)),
                );
            }
            Row::new(row)
        })
        .collect();
    ctx.render_table(
        frame,
        area,
        (block, Row::new(header), rows, widths),
        ctx.ui.selected_member(snap),
    );
}

/// The HOST column's width (a host name is cut to fit).
const HOST_WIDTH: usize = 16;

/// The widths a member's name and its task or detail are cut to.
#[derive(Clone, Copy)]
struct Fits {
    name: usize,
    doing: usize,
}

fn member_row<'a>(
    snap: &Snapshot,
    m: &'a MemberStatus,
    short: bool,
    mid: bool,
    full: bool,
    fits: Fits,
) -> Vec<Cell<'a>> {
    let name = Line::from(vec![
        Span::styled("█ ", Style::new().fg(palette(m.color.as_deref()))),
        Span::raw(fit(&m.name, fits.name)),
    ]);
    let state = Span::styled(state_label(&m.state, short), state_style(&m.state));
    let gone = matches!(m.state.as_str(), "dead" | "exited");
    let doing = if gone {
        Span::styled(
            m.detail
                .clone()
                .unwrap_or_else(|| "no reason recorded".into()),
            Style::new().fg(Color::Red),
        )
    } else if let (Some(d), Some(_)) = (&m.detail, m.rate_limited_until) {
        Span::styled(d.clone(), Style::new().fg(Color::Yellow))
    } else if let Some(id) = &m.current_task {
        let subject = snap.task(id).map(|t| t.subject.as_str()).unwrap_or("");
        Span::raw(format!("#{id} {subject}").trim_end().to_owned())
    } else if let Some(d) = &m.detail {
        Span::styled(d.clone(), DIM)
    } else {
        Span::styled("-", DIM)
    };
    let doing = Span::styled(fit(&doing.content, fits.doing), doing.style);
    let mut cells = vec![Cell::from(name), Cell::from(state), Cell::from(doing)];
    if mid {
        cells.push(Cell::from(
            m.last_activity_ms
                .map(|ms| status::ago(ms, snap.now_ms))
                .unwrap_or_else(|| "-".into()),
        ));
    }
    if full {
        let tokens = if m.model_calls > 0 {
            format!(
                "{}/{}",
                status::tokens(
                    m.usage.input_tokens
                        + m.usage.cache_read_input_tokens
                        + m.usage.cache_creation_input_tokens
                ),
                status::tokens(m.usage.output_tokens)
            )
        } else {
            "-".into()
        };
        let cost = if m.cost_usd > 0.0 {
            format!("${:.3}", m.cost_usd)
        } else {
            "-".into()
        };
        cells.push(Cell::from(Line::from(tokens).alignment(Alignment::Right)));
        cells.push(Cell::from(Line::from(cost).alignment(Alignment::Right)));
    }
    cells
}

fn state_label(state: &str, short: bool) -> &str {
    if !short {
        return state;
    }
    match state {
        "awaiting-approval" => "awaiting",
        "shutting-down" => "stopping",
        "not-started" => "not started",
        other => other,
    }
}
