//! Drawing the dashboard: a pure function of a [`Snapshot`] and the [`UiState`] into a
//! ratatui frame ([`draw`]), and a frame into plain text ([`to_text`]) for `--once` and tests.
//!
//! Two layouts. From [`WIDE_MIN`] up: members across the top, tasks beside the approvals
//! queue in the middle, the message feed across the bottom, all boxed. Below that (a narrow
//! pane beside the team): the four panels stacked, each with a one-line title rule instead
//! of a box, without column headers, and with fewer columns. Any size draws without
//! panicking; what does not fit is cut.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Borders, Cell, Clear, HighlightSpacing, Paragraph, Row, Table, TableState,
    Wrap,
};

use crate::store::approvals::{Approval, Kind};
use crate::store::tasks::Task;
use crate::team::status::{self, MemberStatus};
use crate::ui::dashboard::feed::{Class, FeedEntry};
use crate::ui::dashboard::model::{Snapshot, TaskState};
use crate::ui::dashboard::ui::{Mode, Panel, UiState};

/// The smallest (width, height) that gets the boxed three-row layout.
pub const WIDE_MIN: (u16, u16) = (100, 30);

const DIM: Style = Style::new().fg(Color::DarkGray);
const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
const HEADER: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::BOLD);
const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
const MARK: &str = "▸";

/// The areas of the four panels.
struct Areas {
    members: Rect,
    tasks: Rect,
    approvals: Rect,
    feed: Rect,
}

/// Draws the whole dashboard into `frame`.
pub fn draw(frame: &mut Frame, snap: &Snapshot, ui: &UiState) {
    let area = frame.area();
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, header, snap);
    let compact = body.width < WIDE_MIN.0 || body.height + 2 < WIDE_MIN.1;
    let areas = if compact {
        stacked(body, snap)
    } else {
        wide(body, snap)
    };
    let ctx = |panel: Panel| Ctx {
        snap,
        ui,
        focused: ui.focus == panel,
        compact,
    };
    draw_members(frame, areas.members, &ctx(Panel::Members));
    draw_tasks(frame, areas.tasks, &ctx(Panel::Tasks));
    draw_approvals(frame, areas.approvals, &ctx(Panel::Approvals));
    draw_feed(frame, areas.feed, &ctx(Panel::Feed));
    draw_footer(frame, footer, ui);
    if let Mode::Detail {
        title,
        body: text,
        scroll,
        ..
    } = &ui.mode
    {
        draw_detail(frame, body, title, text, *scroll);
    }
}

/// Renders one frame of `width`×`height` as plain text: no colour, trailing blanks trimmed.
pub fn render_text(snap: &Snapshot, ui: &UiState, width: u16, height: u16) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))
        .expect("the test backend cannot fail");
    terminal
        .draw(|f| draw(f, snap, ui))
        .expect("the test backend cannot fail");
    to_text(terminal.backend().buffer())
}

/// The characters of `buf`, one line per row, trailing blanks trimmed.
pub fn to_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::with_capacity(buf.content.len() + usize::from(area.height));
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        // Cells under the right half of a wide character are not printed.
        let mut hidden = 0usize;
        for x in area.left()..area.right() {
            if hidden > 0 {
                hidden -= 1;
                continue;
            }
            let symbol = buf[(x, y)].symbol();
            line.push_str(symbol);
            hidden = Span::raw(symbol).width().saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

struct Ctx<'a> {
    snap: &'a Snapshot,
    ui: &'a UiState,
    focused: bool,
    compact: bool,
}

impl Ctx<'_> {
    fn block<'t>(&self, title: Line<'t>) -> Block<'t> {
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
    fn render_table<'t, C: Into<Constraint>>(
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

// ---------------------------------------------------------------------------------------
// Layout

/// `num`/`den` of `h`, computed in u32 so that huge sizes cannot overflow.
fn share(h: u16, num: u32, den: u32) -> u16 {
    (u32::from(h) * num / den) as u16
}

/// A count of rows as u16, saturating.
fn rows(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn wide(body: Rect, snap: &Snapshot) -> Areas {
    let h = body.height;
    let members = rows(snap.members.len())
        .saturating_add(3)
        .clamp(4, share(h, 2, 5).max(4));
    let rest = h.saturating_sub(members);
    let middle_want = rows(snap.tasks.len().max(snap.approvals.len()))
        .saturating_add(3)
        .max(5);
    let middle = middle_want.min(rest / 2).max(5.min(rest));
    let [m, mid, feed] = Layout::vertical([
        Constraint::Length(members),
        Constraint::Length(middle),
        Constraint::Fill(1),
    ])
    .areas(body);
    let [tasks, approvals] =
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(mid);
    Areas {
        members: m,
        tasks,
        approvals,
        feed,
    }
}

fn stacked(body: Rect, snap: &Snapshot) -> Areas {
    let h = body.height;
    let members = rows(snap.members.len())
        .saturating_add(1)
        .min(share(h, 2, 5).max(2));
    let left = h.saturating_sub(members);
    let approvals = if snap.approvals.is_empty() {
        1
    } else {
        (rows(snap.approvals.len().min(3)) + 1).min((left / 3).max(1))
    };
    let left = left.saturating_sub(approvals);
    let tasks = rows(snap.tasks.len())
        .saturating_add(1)
        .min(share(left, 9, 20))
        .max(left.min(2));
    let [m, a, t, f] = Layout::vertical([
        Constraint::Length(members),
        Constraint::Length(approvals),
        Constraint::Length(tasks),
        Constraint::Fill(1),
    ])
    .areas(body);
    Areas {
        members: m,
        tasks: t,
        approvals: a,
        feed: f,
    }
}

// ---------------------------------------------------------------------------------------
// Header and footer

fn draw_header(frame: &mut Frame, area: Rect, snap: &Snapshot) {
    let mut spans = vec![
        Span::styled(
            format!(" {} ", snap.team),
            BOLD.add_modifier(Modifier::REVERSED),
        ),
        Span::raw(" "),
    ];
    if !snap.approvals.is_empty() {
        spans.push(Span::styled(
            format!("{} awaiting approval", snap.approvals.len()),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled("  │  ", DIM));
    }
    spans.push(Span::raw(format!("{} members", snap.members.len())));
    // Most pressing first, so a narrow header keeps what matters.
    const ORDER: [&str; 9] = [
        "dead",
        "awaiting-approval",
        "working",
        "running",
        "starting",
        "shutting-down",
        "idle",
        "exited",
        "not-started",
    ];
    let rank = |s: &str| ORDER.iter().position(|o| *o == s).unwrap_or(ORDER.len());
    let mut states: Vec<&str> = snap.members.iter().map(|m| m.state.as_str()).collect();
    states.sort_by_key(|s| (rank(s), *s));
    for chunk in states.chunk_by(|a, b| a == b) {
        spans.push(Span::styled(" · ", DIM));
        spans.push(Span::styled(
            format!("{} {}", chunk.len(), chunk[0]),
            state_style(chunk[0]),
        ));
    }
    if !snap.tmux_reachable {
        spans.push(Span::styled("  │  ", DIM));
        spans.push(Span::styled("tmux: no server", DIM));
    }
    for p in &snap.problems {
        spans.push(Span::styled("  │  ", DIM));
        spans.push(Span::styled(
            format!("cannot read {p}"),
            Style::new().fg(Color::Red),
        ));
    }
    if let Some(d) = &snap.description {
        spans.push(Span::styled("  │  ", DIM));
        spans.push(Span::styled(d.clone(), DIM));
    }
    frame.render_widget(Line::from(spans), area);
}

fn draw_footer(frame: &mut Frame, area: Rect, ui: &UiState) {
    if let Mode::Reject {
        agent, plan, text, ..
    } = &ui.mode
    {
        let prompt = format!(
            "reject {agent}'s {}: {}",
            if *plan { "plan" } else { "request" },
            if *plan {
                "what should change? "
            } else {
                "why (optional)? "
            }
        );
        let hint = "   Enter sends · Esc cancels";
        let line = Line::from(vec![
            Span::styled(prompt.clone(), Style::new().fg(Color::Yellow)),
            Span::raw(text.clone()),
            Span::styled(hint, DIM),
        ]);
        frame.render_widget(line, area);
        let x = area
            .x
            .saturating_add((Span::raw(prompt).width() + Span::raw(text.as_str()).width()) as u16)
            .min(area.right().saturating_sub(1));
        if area.height > 0 && area.width > 0 {
            frame.set_cursor_position(Position::new(x, area.y));
        }
        return;
    }
    if let Some(n) = &ui.notice {
        let style = if n.error {
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(Color::Green)
        };
        frame.render_widget(Line::styled(format!(" {}", n.text), style), area);
        return;
    }
    let hints: &[(&str, &str)] = match (&ui.mode, ui.focus) {
        (Mode::Detail { request_id, .. }, _) if request_id.is_some() => &[
            ("a", "approve"),
            ("r", "reject"),
            ("↑↓", "scroll"),
            ("Esc", "close"),
        ],
        (Mode::Detail { .. }, _) => &[("↑↓", "scroll"), ("Esc", "close")],
        (_, Panel::Members) => &[
            ("Enter/g", "show pane"),
            ("↑↓", "select"),
            ("Tab", "next panel"),
            ("q", "quit"),
        ],
        (_, Panel::Tasks) => &[
            ("Enter", "details"),
            ("↑↓", "select"),
            ("Tab", "next panel"),
            ("q", "quit"),
        ],
        (_, Panel::Approvals) => &[
            ("a", "approve"),
            ("r", "reject"),
            ("Enter", "details"),
            ("Tab", "next panel"),
            ("q", "quit"),
        ],
        (_, Panel::Feed) => &[
            ("↑↓", "scroll"),
            ("End", "newest"),
            ("Enter", "open"),
            ("Tab", "next panel"),
            ("q", "quit"),
        ],
    };
    let mut spans = vec![Span::raw(" ")];
    for (i, (key, what)) in hints.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled("  ", DIM));
        }
        spans.push(Span::styled(*key, BOLD));
        spans.push(Span::styled(format!(" {what}"), DIM));
    }
    frame.render_widget(Line::from(spans), area);
}

// ---------------------------------------------------------------------------------------
// Members

fn draw_members(frame: &mut Frame, area: Rect, ctx: &Ctx) {
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
    let rows: Vec<Row> = snap
        .members
        .iter()
        .map(|m| member_row(snap, m, short, mid, full))
        .collect();
    ctx.render_table(
        frame,
        area,
        (block, Row::new(header), rows, widths),
        ctx.ui.selected_member(snap),
    );
}

fn member_row<'a>(
    snap: &Snapshot,
    m: &'a MemberStatus,
    short: bool,
    mid: bool,
    full: bool,
) -> Row<'a> {
    let name = Line::from(vec![
        Span::styled("█ ", Style::new().fg(palette(m.color.as_deref()))),
        Span::raw(m.name.as_str()),
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
    } else if let Some(id) = &m.current_task {
        let subject = snap.task(id).map(|t| t.subject.as_str()).unwrap_or("");
        Span::raw(format!("#{id} {subject}").trim_end().to_owned())
    } else if let Some(d) = &m.detail {
        Span::styled(d.clone(), DIM)
    } else {
        Span::styled("-", DIM)
    };
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
    Row::new(cells)
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

fn state_style(state: &str) -> Style {
    match state {
        "working" | "running" => Style::new().fg(Color::Green),
        "awaiting-approval" => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        "shutting-down" => Style::new().fg(Color::Yellow),
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

// ---------------------------------------------------------------------------------------
// Tasks

fn draw_tasks(frame: &mut Frame, area: Rect, ctx: &Ctx) {
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
    let rows: Vec<Row> = snap
        .tasks
        .iter()
        .map(|t| task_row(snap, t, owner_w > 0, deps_w > 0))
        .collect();
    ctx.render_table(
        frame,
        area,
        (block, Row::new(header), rows, widths),
        ctx.ui.selected_task(snap),
    );
}

fn task_row<'a>(snap: &Snapshot, t: &'a Task, owner: bool, deps: bool) -> Row<'a> {
    let state = snap.task_state(t);
    let mut cells = vec![
        Cell::from(Span::styled(state.label(), task_style(state))),
        Cell::from(format!("#{}", t.id)),
        Cell::from(t.subject.as_str()),
    ];
    if owner {
        let o = t.owner.as_deref().map(short_owner).unwrap_or("");
        cells.push(Cell::from(Span::styled(
            o.to_owned(),
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

// ---------------------------------------------------------------------------------------
// Approvals

fn draw_approvals(frame: &mut Frame, area: Rect, ctx: &Ctx) {
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

// ---------------------------------------------------------------------------------------
// Feed

fn draw_feed(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let snap = ctx.snap;
    let unread = snap.feed.iter().filter(|e| e.unread).count();
    let mut title = vec![Span::raw(format!(" Messages ({})", snap.feed.len()))];
    if unread > 0 {
        title.push(Span::styled(" · ", DIM));
        title.push(Span::styled(
            format!("• {unread} not read yet"),
            Style::new().fg(Color::Yellow),
        ));
    }
    if ctx.ui.feed_back > 0 && !snap.feed.is_empty() {
        title.push(Span::styled(
            format!(
                " · {} newer below",
                ctx.ui.feed_back.min(snap.feed.len() - 1)
            ),
            DIM,
        ));
    }
    title.push(Span::raw(" "));
    let block = ctx.block(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if snap.feed.is_empty() {
        frame.render_widget(Span::styled(" no messages yet", DIM), inner);
        return;
    }
    let h = usize::from(inner.height);
    let selected = ctx.ui.selected_feed(snap).unwrap_or(0);
    // The selected entry sits at the bottom, the entries before it above.
    let top = (selected + 1).saturating_sub(h);
    let show_time = inner.width >= 70;
    // Names padded to a common width, so the messages start in one column.
    let pad = snap
        .feed
        .iter()
        .flat_map(|e| [&e.from, &e.to])
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(if show_time { 14 } else { 9 });
    let lines: Vec<Line> = snap.feed[top..]
        .iter()
        .take(h)
        .enumerate()
        .map(|(i, e)| {
            let line = feed_line(snap, e, show_time, pad);
            if ctx.focused && top + i == selected {
                line.patch_style(SELECTED)
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn feed_line<'a>(snap: &Snapshot, e: &'a FeedEntry, show_time: bool, pad: usize) -> Line<'a> {
    let mut spans = vec![if e.unread {
        Span::styled("•", Style::new().fg(Color::Yellow))
    } else {
        Span::raw(" ")
    }];
    if show_time {
        spans.push(Span::styled(format!("{} ", clock_time(snap, e.at_ms)), DIM));
    }
    // Idle notices fade into the background, names and all.
    let idle = e.class == Class::Idle;
    let name = |n: &'a str| {
        let style = if idle {
            DIM
        } else {
            Style::new().fg(palette(snap.colour_of(n)))
        };
        Span::styled(format!("{n:<pad$}"), style)
    };
    spans.push(name(&e.from));
    spans.push(Span::styled(" → ", DIM));
    spans.push(name(&e.to));
    spans.push(Span::raw(" "));
    let body_style = match e.class {
        Class::Plain => Style::new(),
        Class::Idle => DIM,
        Class::Completed => Style::new().fg(Color::Green),
        Class::Shutdown => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        Class::Approval => Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
        Class::Task => Style::new().fg(Color::Cyan),
        Class::Alert => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
    };
    if e.is_protocol() {
        spans.push(Span::styled(
            "» ",
            body_style.add_modifier(Modifier::ITALIC),
        ));
    }
    spans.push(Span::styled(e.line.as_str(), body_style));
    if e.count > 1 {
        spans.push(Span::styled(format!(" ×{}", e.count), body_style));
    }
    Line::from(spans)
}

fn clock_time(snap: &Snapshot, ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned(snap.tz.clone()).strftime("%H:%M:%S").to_string())
        .unwrap_or_else(|_| "--:--:--".into())
}

// ---------------------------------------------------------------------------------------
// Detail view

fn draw_detail(frame: &mut Frame, area: Rect, title: &str, body: &str, scroll: u16) {
    frame.render_widget(Clear, area);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(Style::new().fg(Color::Cyan))
        .title(Line::styled(format!(" {title} "), BOLD));
    frame.render_widget(
        Paragraph::new(body)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyEvent};

    use super::*;
    use crate::ui::dashboard::fixture;
    use crate::ui::dashboard::ui::Selection;

    fn frame(snap: &Snapshot, ui: &UiState, w: u16, h: u16) -> Buffer {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, snap, ui)).unwrap();
        t.backend().buffer().clone()
    }

    /// The style of the first cell of the first occurrence of `needle`.
    fn style_at(buf: &Buffer, needle: &str) -> Style {
        let text = to_text(buf);
        for (y, line) in text.lines().enumerate() {
            if let Some(col) = line.find(needle) {
                let x = line[..col].chars().count() as u16;
                return buf[(x, y as u16)].style();
            }
        }
        panic!("{needle:?} is not on screen:\n{text}");
    }

    #[test]
    fn wide_frame() {
        let text = render_text(&fixture::snapshot(), &UiState::default(), 140, 40);
        insta::assert_snapshot!("wide_140x40", text);
    }

    #[test]
    fn narrow_frame() {
        let text = render_text(&fixture::snapshot(), &UiState::default(), 60, 24);
        insta::assert_snapshot!("narrow_60x24", text);
    }

    #[test]
    fn approvals_focused_with_the_reject_prompt_open() {
        let snap = fixture::snapshot();
        let mut ui = UiState {
            focus: Panel::Approvals,
            approvals: Selection {
                key: Some(fixture::PLAN_ID.into()),
                row: 0,
            },
            ..UiState::default()
        };
        for key in [KeyCode::Char('r'), KeyCode::Char('n'), KeyCode::Char('o')] {
            assert_eq!(ui.handle_key(&snap, KeyEvent::from(key)), None);
        }
        let text = render_text(&snap, &ui, 100, 30);
        insta::assert_snapshot!("reject_prompt_100x30", text);
    }

    #[test]
    fn detail_view_of_a_plan() {
        let snap = fixture::snapshot();
        let mut ui = UiState {
            focus: Panel::Approvals,
            ..UiState::default()
        };
        ui.handle_key(&snap, KeyEvent::from(KeyCode::Enter));
        assert!(matches!(ui.mode, Mode::Detail { .. }));
        let text = render_text(&snap, &ui, 80, 20);
        insta::assert_snapshot!("plan_detail_80x20", text);
    }

    #[test]
    fn an_empty_team_says_so() {
        let mut snap = Snapshot::empty("solo");
        snap.now_ms = fixture::NOW;
        snap.members = fixture::members().into_iter().take(1).collect();
        let text = render_text(&snap, &UiState::default(), 100, 24);
        assert!(text.contains("no tasks"), "{text}");
        assert!(text.contains("none pending"), "{text}");
        assert!(text.contains("no messages yet"), "{text}");
        assert!(text.contains("tmux: no server"), "{text}");
    }

    #[test]
    fn any_size_draws_without_panicking() {
        let snap = fixture::snapshot();
        let mut uis = vec![UiState::default()];
        for keys in [
            &[
                KeyCode::Tab,
                KeyCode::Tab,
                KeyCode::Char('r'),
                KeyCode::Char('x'),
            ][..],
            &[KeyCode::Tab, KeyCode::Tab, KeyCode::Enter][..],
            &[KeyCode::BackTab, KeyCode::Up, KeyCode::Up][..],
        ] {
            let mut ui = UiState::default();
            for k in keys {
                ui.handle_key(&snap, KeyEvent::from(*k));
            }
            uis.push(ui);
        }
        // Both layouts, their thresholds, and the degenerate sizes.
        let widths = [0, 1, 3, 8, 20, 40, 59, 60, 99, 100, 180];
        let heights = [0, 1, 2, 3, 5, 8, 12, 19, 20, 24, 29, 30, 40];
        for ui in &uis {
            for &w in &widths {
                for &h in &heights {
                    let text = render_text(&snap, ui, w, h);
                    assert_eq!(text.lines().count(), usize::from(h), "{w}x{h}");
                }
            }
        }
    }

    #[test]
    fn narrow_frames_keep_every_panel() {
        let snap = fixture::snapshot();
        for (w, h) in [(60, 20), (60, 24), (80, 22), (99, 40)] {
            let text = render_text(&snap, &UiState::default(), w, h);
            for title in ["Members", "Approvals", "Tasks", "Messages"] {
                assert!(text.contains(title), "{title} missing at {w}x{h}:\n{text}");
            }
            assert!(text.lines().all(|l| l.chars().count() <= usize::from(w)));
        }
    }

    #[test]
    fn states_and_messages_are_styled_by_what_they_mean() {
        let snap = fixture::snapshot();
        let buf = frame(&snap, &UiState::default(), 140, 40);
        let red = Some(Color::Red);
        assert_eq!(style_at(&buf, "dead ").fg, red);
        assert_eq!(style_at(&buf, "killed by signal 9").fg, red);
        assert_eq!(style_at(&buf, "exited").fg, red);
        assert_eq!(style_at(&buf, "awaiting-approval").fg, Some(Color::Yellow));
        assert_eq!(style_at(&buf, "blocked #4").fg, Some(Color::Yellow));
        // Idle notices are dimmed, names included; shutdown and approval events stand out.
        assert_eq!(style_at(&buf, "carol is idle").fg, Some(Color::DarkGray));
        assert_eq!(
            style_at(&buf, "carol     → team-lead").fg,
            Some(Color::DarkGray)
        );
        let shutdown = style_at(&buf, "shutdown requested");
        assert_eq!(shutdown.fg, Some(Color::Yellow));
        assert!(shutdown.add_modifier.contains(Modifier::BOLD));
        assert_eq!(
            style_at(&buf, "alice asks approval").fg,
            Some(Color::Magenta)
        );
        assert!(matches!(
            style_at(&buf, "Please start").fg,
            None | Some(Color::Reset)
        ));
        // Members wear their roster colour.
        assert_eq!(style_at(&buf, "█ bob").fg, Some(Color::Green));
    }

    #[test]
    fn the_focused_panel_shows_its_selection() {
        let snap = fixture::snapshot();
        let ui = UiState {
            focus: Panel::Tasks,
            tasks: Selection {
                key: Some("4".into()),
                row: 0,
            },
            ..UiState::default()
        };
        let text = render_text(&snap, &ui, 140, 40);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains(MARK)).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains("Parse statements"), "{text}");
        let buf = frame(&snap, &ui, 140, 40);
        assert!(
            style_at(&buf, "Parse statements")
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }
}
