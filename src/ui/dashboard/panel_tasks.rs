//! The tasks panel: the team's task board. The title counts the tasks by state (active,
//! ready, blocked, done; states with none are left out). One row per task: state, id,
//! subject, then two columns that appear only when some task fills them: the owner (in its
//! roster colour, without the `@team` suffix) and what the task waits for (`⟵ #1 #2`, open
//! blockers in yellow, finished ones crossed out). Under 70 columns inside the panel those
//! two columns are capped narrower. Drawn the same in both layouts (see [`Ctx`]).
//!
//! Invariants: a task's state is the snapshot's ([`Snapshot::task_state`]), never worked out
//! here; done tasks are dimmed as a whole row; an empty board says "no tasks"; a subject
//! or owner too long for its column ends in "…".

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use crate::ui::dashboard::model::{Snapshot, TaskState};
use crate::ui::dashboard::style::{Ctx, DIM, palette};
use swarm_store::tasks::Task;
use swarm_util::table::fit;

pub(super) fn draw_tasks(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let snap = ctx.snap;
    let mut counts = [0usize; 4];
    for t in &snap.tasks {
        counts[snap.task_state(t) as usize] += 1;
    }
    let mut title = vec![Span::raw(" Tasks")];
    for (state, n) in [
        TaskState::Active,
        TaskState::Ready,
        TaskState::Blocked,
        TaskState::Done,
    ]
    .iter()
    .map(|s| (*s, counts[*s as usize]))
    .filter(|(_, n)| *n > 0)
    {
        title.push(Span::styled(" · ", DIM));
        title.push(Span::styled(
            format!("{n} {}", state.label()),
            task_style(state),
        ));
    }
    title.push(Span::raw(" "));
    let block = ctx.block(Line::from(title));
    if snap.tasks.is_empty() {
        frame.render_widget(
            Paragraph::new(Span::styled(" no tasks", DIM)).block(block),
            area,
        );
        return;
    }
    let deps: Vec<String> = snap.tasks.iter().map(deps_text).collect();
    let deps_w = deps.iter().map(|d| d.chars().count()).max().unwrap_or(0) as u16;
    let owner_w = snap
        .tasks
        .iter()
        .filter_map(|t| t.owner.as_deref())
        .map(|o| short_owner(o).chars().count())
        .max()
        .unwrap_or(0) as u16;
    let inner = block.inner(area).width;
    let narrow = inner < 70;
    let mut widths = vec![
        Constraint::Length(7),
        Constraint::Length(
            snap.tasks
                .iter()
                .map(|t| t.id.len() as u16 + 1)
                .max()
                .unwrap_or(2),
        ),
        Constraint::Fill(1),
    ];
    let mut header = vec!["STATE", "ID", "SUBJECT"];
    if owner_w > 0 {
        widths.push(Constraint::Length(
            owner_w.clamp(5, if narrow { 10 } else { 14 }),
        ));
        header.push("OWNER");
    }
    if deps_w > 0 {
        widths.push(Constraint::Length(
            deps_w.clamp(5, if narrow { 12 } else { 20 }),
        ));
        header.push("AFTER");
    }
    // Lengths of the fixed columns, and what is left for the subject (ratatui's one-column
    // spacing, the selection mark's column), so cut text can end in "…".
    let length = |c: &Constraint| match c {
        Constraint::Length(n) => *n,
        _ => 0,
    };
    let subject_w =
        inner.saturating_sub(widths.iter().map(length).sum::<u16>() + widths.len() as u16);
    let owner_fit = widths.get(3).filter(|_| owner_w > 0).map(length);
    let rows: Vec<Row> = snap
        .tasks
        .iter()
        .map(|t| task_row(snap, t, (usize::from(subject_w), owner_fit), deps_w > 0))
        .collect();
    ctx.render_table(
        frame,
        area,
        (block, Row::new(header), rows, widths),
        ctx.ui.selected_task(snap),
    );
}

/// `fits`: the subject's width, and the owner column's when there is one.
fn task_row<'a>(snap: &Snapshot, t: &'a Task, fits: (usize, Option<u16>), deps: bool) -> Row<'a> {
    let state = snap.task_state(t);
    let mut cells = vec![
        Cell::from(Span::styled(state.label(), task_style(state))),
        Cell::from(format!("#{}", t.id)),
        Cell::from(fit(&t.subject, fits.0)),
    ];
    if let Some(owner_w) = fits.1 {
        let o = t.owner.as_deref().map(short_owner).unwrap_or("");
        cells.push(Cell::from(Span::styled(
            fit(o, usize::from(owner_w)),
            Style::new().fg(palette(snap.colour_of(o))),
        )));
    }
    if deps {
        let open = snap.open_blockers(t);
        let mut spans = Vec::new();
        if !t.blocked_by.is_empty() {
            spans.push(Span::styled("⟵", DIM));
        }
        for b in &t.blocked_by {
            let style = if open.contains(&b.as_str()) {
                Style::new().fg(Color::Yellow)
            } else {
                DIM.add_modifier(Modifier::CROSSED_OUT)
            };
            spans.push(Span::raw(" "));
            spans.push(Span::styled(format!("#{b}"), style));
        }
        cells.push(Cell::from(Line::from(spans)));
    }
    let row = Row::new(cells);
    if state == TaskState::Done {
        row.style(DIM)
    } else {
        row
    }
}

fn deps_text(t: &Task) -> String {
    if t.blocked_by.is_empty() {
        return String::new();
    }
    let mut s = "⟵".to_owned();
    for b in &t.blocked_by {
        s.push_str(&format!(" #{b}"));
    }
    s
}

fn short_owner(o: &str) -> &str {
    o.split('@').next().unwrap_or(o)
}

fn task_style(s: TaskState) -> Style {
    match s {
        TaskState::Active => Style::new().fg(Color::Green),
        TaskState::Ready => Style::new().fg(Color::Cyan),
        TaskState::Blocked => Style::new().fg(Color::Yellow),
        TaskState::Done => DIM,
    }
}
