//! The dashboard's interaction state (which panel has the focus, what is selected in each,
//! the reject prompt, the detail view, the notice line) and what each key does to it.
//!
//! [`UiState::handle_key`] is pure: it changes only the UI state and returns the
//! [`Action`] a key asks for (quit, approve, reject, jump to a pane), which the app carries
//! out. Selections are kept by identity (member name, task id, request id), so they stay on
//! the same thing when a new snapshot reorders the lists, and fall back to the nearest row
//! when the thing is gone.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::ui::dashboard::model::Snapshot;
use swarm_store::approvals::{Approval, Kind};

/// The panels, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Members,
    Tasks,
    Approvals,
    Feed,
}

impl Panel {
    const ORDER: [Panel; 4] = [Panel::Members, Panel::Tasks, Panel::Approvals, Panel::Feed];

    fn step(self, forward: bool) -> Panel {
        let i = Panel::ORDER.iter().position(|p| *p == self).unwrap_or(0);
        let n = Panel::ORDER.len();
        Panel::ORDER[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// A selection in one list: the key of the selected row, and its row last time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub key: Option<String>,
    pub row: usize,
}

impl Selection {
    /// The selected row among `keys`: the remembered key if still there, else the nearest
    /// row to where it was; `None` if the list is empty.
    pub fn index<S: AsRef<str>>(&self, keys: &[S]) -> Option<usize> {
        if keys.is_empty() {
            return None;
        }
        self.key
            .as_deref()
            .and_then(|k| keys.iter().position(|x| x.as_ref() == k))
            .or(Some(self.row.min(keys.len() - 1)))
    }

    fn set<S: AsRef<str>>(&mut self, keys: &[S], row: usize) {
        if let Some(k) = keys.get(row) {
            self.key = Some(k.as_ref().to_owned());
            self.row = row;
        }
    }

    /// Moves by `delta` rows, staying within the list.
    fn step<S: AsRef<str>>(&mut self, keys: &[S], delta: isize) {
        if let Some(i) = self.index(keys) {
            let last = keys.len() as isize - 1;
            self.set(keys, (i as isize + delta).clamp(0, last) as usize);
        }
    }
}

/// What the bottom line is doing besides showing hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing the feedback for a rejection.
    Reject {
        request_id: String,
        agent: String,
        plan: bool,
        text: String,
    },
    /// A full-text view over the panels.
    Detail {
        title: String,
        body: String,
        scroll: u16,
        /// The request shown, if it is one: `a`/`r` act on it.
        request_id: Option<String>,
    },
}

/// A message on the bottom line, until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

/// What a key asks the app to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Quit,
    Approve {
        request_id: String,
    },
    Reject {
        request_id: String,
        feedback: String,
    },
    /// Show this member's tmux pane.
    Jump {
        member: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiState {
    pub focus: Panel,
    pub members: Selection,
    pub tasks: Selection,
    pub approvals: Selection,
    /// How many entries above the newest the feed's selection is (0: the newest, and the
    /// feed follows new messages).
    pub feed_back: usize,
    pub mode: Mode,
    pub notice: Option<Notice>,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            focus: Panel::Members,
            members: Selection::default(),
            tasks: Selection::default(),
            approvals: Selection::default(),
            feed_back: 0,
            mode: Mode::Normal,
            notice: None,
        }
    }
}

const PAGE: isize = 10;

impl UiState {
    pub fn notify(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: false,
        });
    }

    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: true,
        });
    }

    pub fn selected_member(&self, snap: &Snapshot) -> Option<usize> {
        self.members.index(&member_keys(snap))
    }

    pub fn selected_task(&self, snap: &Snapshot) -> Option<usize> {
        self.tasks.index(&task_keys(snap))
    }

    pub fn selected_approval(&self, snap: &Snapshot) -> Option<usize> {
        self.approvals.index(&approval_keys(snap))
    }

    /// The selected feed entry's index, counted from the oldest.
    pub fn selected_feed(&self, snap: &Snapshot) -> Option<usize> {
        let n = snap.feed.len();
        (n > 0).then(|| n - 1 - self.feed_back.min(n - 1))
    }

    /// After a reload: a feed scrolled back stays on the entry it showed, however many
    /// messages arrived below it (the newest-following position needs nothing).
    pub fn keep_feed_position(&mut self, old: &Snapshot, new: &Snapshot) {
        if self.feed_back == 0 {
            return;
        }
        let Some(shown) = self.selected_feed(old).map(|i| &old.feed[i]) else {
            return;
        };
        if let Some(i) = new
            .feed
            .iter()
            .rposition(|e| e.key == shown.key && e.to == shown.to)
        {
            self.feed_back = new.feed.len() - 1 - i;
        }
    }

    /// Applies a key; returns what the app should do, if anything.
    pub fn handle_key(&mut self, snap: &Snapshot, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char('c' | 'd'))
        {
            return Some(Action::Quit);
        }
        self.notice = None;
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.normal_key(snap, key),
            Mode::Reject {
                request_id,
                agent,
                plan,
                text,
            } => self.reject_key(key, request_id, agent, plan, text),
            Mode::Detail {
                title,
                body,
                scroll,
                request_id,
            } => self.detail_key(snap, key, title, body, scroll, request_id),
        }
    }

    fn normal_key(&mut self, snap: &Snapshot, key: KeyEvent) -> Option<Action> {
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Some(Action::Quit),
            KeyCode::Tab => self.focus = self.focus.step(true),
            KeyCode::BackTab => self.focus = self.focus.step(false),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(snap, 1),
            KeyCode::Up | KeyCode::Char('k') => self.move_by(snap, -1),
            KeyCode::PageDown => self.move_by(snap, PAGE),
            KeyCode::PageUp => self.move_by(snap, -PAGE),
            KeyCode::Home => self.move_by(snap, isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.move_by(snap, isize::MAX / 2),
            KeyCode::Char('a') => return self.approve(snap, None),
            KeyCode::Char('r') => self.start_reject(snap, None),
            KeyCode::Char('g') if self.focus == Panel::Members => return self.jump(snap),
            KeyCode::Enter => match self.focus {
                Panel::Members => return self.jump(snap),
                Panel::Tasks => self.open_task(snap),
                Panel::Approvals => self.open_approval(snap),
                Panel::Feed => self.open_message(snap),
            },
            _ => {}
        }
        None
    }

    fn move_by(&mut self, snap: &Snapshot, delta: isize) {
        match self.focus {
            Panel::Members => self.members.step(&member_keys(snap), delta),
            Panel::Tasks => self.tasks.step(&task_keys(snap), delta),
            Panel::Approvals => self.approvals.step(&approval_keys(snap), delta),
            Panel::Feed => {
                // Down is newer, i.e. fewer entries back from the newest.
                let max = snap.feed.len().saturating_sub(1) as isize;
                self.feed_back =
                    (self.feed_back.min(max as usize) as isize - delta).clamp(0, max) as usize;
            }
        }
    }

    /// The pending request `a`/`r` act on: the one in the detail view, else the selected one
    /// if the approvals panel has the focus. Elsewhere the key moves the focus there first,
    /// so a stray key never decides a request nobody was looking at.
    fn target(&mut self, snap: &Snapshot, shown: Option<&str>) -> Option<Approval> {
        if let Some(id) = shown {
            let found = snap.approval(id).cloned();
            if found.is_none() {
                self.warn(format!("request {id} is no longer pending"));
            }
            return found;
        }
        let Some(i) = self.selected_approval(snap) else {
            self.warn("no pending requests");
            return None;
        };
        if self.focus != Panel::Approvals {
            self.focus = Panel::Approvals;
            self.notify(format!(
                "{} pending request(s): select one, then press a to approve or r to reject",
                snap.approvals.len()
            ));
            return None;
        }
        snap.approvals.get(i).cloned()
    }

    fn approve(&mut self, snap: &Snapshot, shown: Option<&str>) -> Option<Action> {
        let a = self.target(snap, shown)?;
        Some(Action::Approve {
            request_id: a.request_id,
        })
    }

    fn start_reject(&mut self, snap: &Snapshot, shown: Option<&str>) {
        if let Some(a) = self.target(snap, shown) {
            self.mode = Mode::Reject {
                request_id: a.request_id,
                agent: a.agent,
                plan: a.kind == Kind::Plan,
                text: String::new(),
            };
        }
    }

    fn reject_key(
        &mut self,
        key: KeyEvent,
        request_id: String,
        agent: String,
        plan: bool,
        mut text: String,
    ) -> Option<Action> {
        match key.code {
            KeyCode::Esc => {
                self.notify("rejection cancelled");
                return None;
            }
            KeyCode::Enter if plan && text.trim().is_empty() => {
                self.warn("rejecting a plan needs feedback: say what to change");
            }
            KeyCode::Enter => {
                return Some(Action::Reject {
                    request_id,
                    feedback: text.trim().to_owned(),
                });
            }
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                text.push(c);
            }
            _ => {}
        }
        self.mode = Mode::Reject {
            request_id,
            agent,
            plan,
            text,
        };
        None
    }

    fn detail_key(
        &mut self,
        snap: &Snapshot,
        key: KeyEvent,
        title: String,
        body: String,
        mut scroll: u16,
        request_id: Option<String>,
    ) -> Option<Action> {
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => return None,
            KeyCode::Char('a') if request_id.is_some() => {
                return self.approve(snap, request_id.as_deref());
            }
            KeyCode::Char('r') if request_id.is_some() => {
                self.start_reject(snap, request_id.as_deref());
                return None;
            }
            KeyCode::Down | KeyCode::Char('j') => scroll = scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => scroll = scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => scroll = scroll.saturating_add(10),
            KeyCode::PageUp => scroll = scroll.saturating_sub(10),
            KeyCode::Home => scroll = 0,
            _ => {}
        }
        self.mode = Mode::Detail {
            title,
            body,
            scroll,
            request_id,
        };
        None
    }

    fn jump(&mut self, snap: &Snapshot) -> Option<Action> {
        let i = self.selected_member(snap)?;
        Some(Action::Jump {
            member: snap.members[i].name.clone(),
        })
    }

    fn open_task(&mut self, snap: &Snapshot) {
        let Some(t) = self.selected_task(snap).map(|i| &snap.tasks[i]) else {
            return;
        };
        let mut body = format!(
            "status: {} ({})\nowner: {}\n",
            snap.task_state(t).label(),
            t.status.as_str(),
            t.owner.as_deref().unwrap_or("-")
        );
        if !t.blocked_by.is_empty() {
            let open = snap.open_blockers(t);
            body.push_str(&format!(
                "blocked by: {}{}\n",
                ids(&t.blocked_by),
                if open.is_empty() {
                    " (all done)".to_owned()
                } else {
                    format!(" (open: {})", ids(&open))
                }
            ));
        }
        if !t.blocks.is_empty() {
            body.push_str(&format!("blocks: {}\n", ids(&t.blocks)));
        }
        if let Some(a) = &t.active_form {
            body.push_str(&format!("active form: {a}\n"));
        }
        if !t.description.is_empty() {
            body.push('\n');
            body.push_str(&t.description);
        }
        self.mode = Mode::Detail {
            title: format!("Task #{} {}", t.id, t.subject),
            body,
            scroll: 0,
            request_id: None,
        };
    }

    fn open_approval(&mut self, snap: &Snapshot) {
        let Some(a) = self.selected_approval(snap).map(|i| &snap.approvals[i]) else {
            return;
        };
        let detail = match &a.detail {
            serde_json::Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let (kind, body) = match a.kind {
            Kind::Plan => ("plan", detail),
            Kind::Permission => ("permission", format!("{}\n\n{detail}", a.summary)),
        };
        self.mode = Mode::Detail {
            title: format!(
                "{kind} request from {}, {} [{}]",
                a.agent,
                swarm_team::life::status::ago(a.created_ms, snap.now_ms),
                a.request_id
            ),
            body,
            scroll: 0,
            request_id: Some(a.request_id.clone()),
        };
    }

    fn open_message(&mut self, snap: &Snapshot) {
        let Some(e) = self.selected_feed(snap).map(|i| &snap.feed[i]) else {
            return;
        };
        let body = if e.is_protocol() {
            let pretty = serde_json::from_str::<serde_json::Value>(&e.text)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| e.text.clone());
            format!("{}\n\n{pretty}", e.line)
        } else {
            e.text.clone()
        };
        self.mode = Mode::Detail {
            title: format!(
                "{} → {}{}",
                e.from,
                e.to,
                if e.unread { " (not read yet)" } else { "" }
            ),
            body,
            scroll: 0,
            request_id: None,
        };
    }
}

fn ids<S: AsRef<str>>(ids: &[S]) -> String {
    ids.iter()
        .map(|i| format!("#{}", i.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn member_keys(snap: &Snapshot) -> Vec<&str> {
    snap.members.iter().map(|m| m.name.as_str()).collect()
}

fn task_keys(snap: &Snapshot) -> Vec<&str> {
    snap.tasks.iter().map(|t| t.id.as_str()).collect()
}

fn approval_keys(snap: &Snapshot) -> Vec<&str> {
    snap.approvals
        .iter()
        .map(|a| a.request_id.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::dashboard::fixture;
    use swarm_team::views::feed::FeedEntry;

    fn press(ui: &mut UiState, snap: &Snapshot, codes: &[KeyCode]) -> Option<Action> {
        let mut last = None;
        for c in codes {
            last = ui.handle_key(snap, KeyEvent::from(*c));
        }
        last
    }

    #[test]
    fn keys_move_open_and_ask_for_actions() {
        let snap = fixture::snapshot();
        let mut ui = UiState::default();
        use KeyCode::*;
        press(&mut ui, &snap, &[Char('j'), Down]);
        assert_eq!(ui.members.key.as_deref(), Some("bob"));
        assert_eq!(
            press(&mut ui, &snap, &[Enter]),
            Some(Action::Jump {
                member: "bob".into()
            })
        );
        press(&mut ui, &snap, &[Tab, End, Enter]);
        assert_eq!(ui.focus, Panel::Tasks);
        match &ui.mode {
            Mode::Detail { title, body, .. } => {
                assert_eq!(title, "Task #1 Sketch the AST");
                assert!(body.contains("status: done (completed)"), "{body}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(press(&mut ui, &snap, &[Esc]), None, "Esc closes, not quits");
        assert_eq!(ui.mode, Mode::Normal);
        press(&mut ui, &snap, &[Tab, Tab, Up, Char('k'), Char('k')]);
        assert_eq!((ui.focus, ui.feed_back), (Panel::Feed, 3));
        press(&mut ui, &snap, &[Char('G')]);
        assert_eq!(ui.feed_back, 0);
        // From another panel `a` only shows the queue; there it approves the selection.
        assert_eq!(press(&mut ui, &snap, &[Char('a')]), None);
        assert_eq!(ui.focus, Panel::Approvals);
        assert!(ui.notice.is_some());
        assert_eq!(
            press(&mut ui, &snap, &[Char('a')]),
            Some(Action::Approve {
                request_id: fixture::PLAN_ID.into()
            })
        );
        // Reject a permission request with a reason typed on the bottom line.
        press(
            &mut ui,
            &snap,
            &[Down, Char('r'), Char('n'), Char('o'), Char('p'), Backspace],
        );
        assert_eq!(
            press(&mut ui, &snap, &[Enter]),
            Some(Action::Reject {
                request_id: fixture::PERM_ID.into(),
                feedback: "no".into()
            })
        );
        assert_eq!(press(&mut ui, &snap, &[Char('q')]), Some(Action::Quit));
        let ctrl_c = KeyEvent::new(Char('c'), KeyModifiers::CONTROL);
        press(&mut ui, &snap, &[Char('r')]);
        assert_eq!(ui.handle_key(&snap, ctrl_c), Some(Action::Quit));
    }

    #[test]
    fn a_scrolled_back_feed_stays_on_its_entry_when_mail_arrives() {
        let old = fixture::snapshot();
        let mut ui = UiState {
            feed_back: 3,
            ..UiState::default()
        };
        let shown = old.feed[ui.selected_feed(&old).unwrap()].clone();
        let mut new = old.clone();
        for i in 0..2 {
            let mut e = FeedEntry::new(
                "bob",
                &swarm_store::mailbox::Envelope::new("alice", "more"),
                true,
            );
            e.key = format!("new-{i}");
            new.feed.push(e);
        }
        ui.keep_feed_position(&old, &new);
        assert_eq!(ui.feed_back, 5);
        assert_eq!(new.feed[ui.selected_feed(&new).unwrap()], shown);
        // Following the newest, it keeps following.
        let mut ui = UiState::default();
        ui.keep_feed_position(&old, &new);
        assert_eq!(ui.feed_back, 0);
    }

    #[test]
    fn selection_follows_its_key_and_falls_back_to_the_nearest_row() {
        let mut s = Selection::default();
        assert_eq!(s.index::<&str>(&[]), None);
        let keys = ["a", "b", "c"];
        assert_eq!(s.index(&keys), Some(0));
        s.step(&keys, 2);
        assert_eq!(s.index(&keys), Some(2));
        s.step(&keys, 5);
        assert_eq!(s.index(&keys), Some(2));
        assert_eq!(s.index(&["c", "a"]), Some(0), "follows 'c'");
        assert_eq!(s.index(&["a", "b"]), Some(1), "'c' gone: nearest row");
        s.step(&keys, -9);
        assert_eq!(s.key.as_deref(), Some("a"));
    }

    #[test]
    fn tab_cycles_through_the_panels_both_ways() {
        let mut p = Panel::Members;
        let mut seen = Vec::new();
        for _ in 0..4 {
            p = p.step(true);
            seen.push(p);
        }
        assert_eq!(
            seen,
            [Panel::Tasks, Panel::Approvals, Panel::Feed, Panel::Members]
        );
        assert_eq!(Panel::Members.step(false), Panel::Feed);
    }
}
