//! Drawing the dashboard: a pure function of a [`Snapshot`] and the [`UiState`] into a
//! ratatui frame ([`draw`]), and a frame into plain text ([`to_text`]) for `--once` and tests.
//!
//! Two layouts. From [`WIDE_MIN`] up: members across the top, tasks beside the approvals
//! queue in the middle, the message feed across the bottom, all boxed. Below that (a narrow
//! pane beside the team): the four panels stacked, each with a one-line title rule instead
//! of a box, without column headers, and with fewer columns. Any size draws without
//! panicking; what does not fit is cut.
//!
//! This file owns the frame: choosing the layout and placing the panels in it, the header
//! line, the footer line (key hints, the notice, the reject prompt) and the detail view over
//! the body. Each panel draws itself, in both layouts, in its own file (`panel_members.rs`,
//! `panel_tasks.rs`, `panel_approvals.rs`, `panel_feed.rs`); what they share is in
//! `style.rs`.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};

use crate::ui::dashboard::model::Snapshot;
use crate::ui::dashboard::panel_approvals::draw_approvals;
use crate::ui::dashboard::panel_feed::draw_feed;
use crate::ui::dashboard::panel_members::draw_members;
use crate::ui::dashboard::panel_tasks::draw_tasks;
use crate::ui::dashboard::style::{BOLD, Ctx, DIM, state_style};
use crate::ui::dashboard::ui::{Mode, Panel, UiState};

/// The smallest (width, height) that gets the boxed three-row layout.
pub const WIDE_MIN: (u16, u16) = (100, 30);

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
    for line in [&snap.budget, &snap.merge_queue].into_iter().flatten() {
        spans.push(Span::styled("  │  ", DIM));
        spans.push(Span::raw(line.clone()));
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
    use crate::ui::dashboard::style::MARK;
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

    /// A team across hosts gets a HOST column, which names the host of each member on
    /// another one; a team on one machine has none (the frames above).
    #[test]
    fn members_on_other_hosts_show_theirs() {
        let mut snap = fixture::snapshot();
        snap.members[1].host = Some("gpu-box-1".to_owned());
        let text = render_text(&snap, &UiState::default(), 140, 40);
        let header = text.lines().find(|l| l.contains("MEMBER")).unwrap();
        assert!(header.contains("HOST"), "{text}");
        let row = text
            .lines()
            .find(|l| l.contains(snap.members[1].name.as_str()))
            .unwrap();
        assert!(row.contains("gpu-box-1"), "{text}");
        let plain = render_text(&fixture::snapshot(), &UiState::default(), 140, 40);
        assert!(!plain.contains("HOST"), "{plain}");
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
    fn the_header_shows_the_budget_spent_and_the_merge_queue() {
        let mut snap = fixture::snapshot();
        snap.budget = Some("budget: 4200 tokens of 6000 (70 %)".into());
        let text = to_text(&frame(&snap, &UiState::default(), 160, 30));
        let header = text.lines().next().unwrap();
        assert!(
            header.contains("budget: 4200 tokens of 6000 (70 %)"),
            "{header}"
        );
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
