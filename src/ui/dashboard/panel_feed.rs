//! The message feed panel: draws the entries that `feed.rs` reads from the team's inboxes,
//! one line each: a `•` if not read yet, the clock time (in the snapshot's time zone) when
//! the panel is at least 70 columns wide, sender `→` recipient padded to one width so the
//! messages start in one column, then the message styled by its class (idle notices dimmed,
//! names included; protocol messages marked `»`; a folded run counted `×n`). The title
//! counts the messages, the unread ones, and the newer ones below when scrolled back.
//!
//! Invariants: the selected entry (the newest unless scrolled back) is always on screen: on
//! the panel's bottom line with the entries before it above, unless every entry fits; at
//! most as many lines as the panel is high are built. Drawn the same in both layouts (see
//! [`Ctx`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::ui::dashboard::model::Snapshot;
use crate::ui::dashboard::style::{Ctx, DIM, SELECTED, palette};
use swarm_team::views::feed::{Class, FeedEntry};

pub(super) fn draw_feed(frame: &mut Frame, area: Rect, ctx: &Ctx) {
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
