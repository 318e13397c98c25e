//! Webhook notifications (`--notify URL`, repeatable): a small JSON event posted to each
//! URL when something needs a person or is over: a request waits for a decision
//! (`approval_waiting`), a teammate died (`teammate_died`), the budget passed 80 %
//! (`budget_80`), the merge queue held a branch (`merge_held`), the run ended
//! (`run_ended`).
//!
//! Events are found by comparing each new view of a team with the one before
//! ([`events`]), so what was already so when the server started is not news, except a
//! request that still waits. Each event has a key and is sent at most once per server
//! (per URL). A post is retried with backoff on a network error, a 5xx, a 408 or a 429,
//! and given up on another 4xx; it runs on its own task, so a slow or dead webhook never
//! holds the team or the page up. The body has `text` (what Slack's incoming webhooks
//! show, and ntfy with `?tpl=1&m={{.text}}`) beside the event's fields.
//!
//! The text holds what agents wrote (a plan's summary, a reason), so it is made safe for
//! the target its URL names ([`Target`]): for Slack (`hooks.slack.com`) `&`, `<` and `>`
//! are escaped, so `<!channel>` or `<@U123>` cannot mention anyone and `<url|text>`
//! cannot disguise a link; for ntfy (`ntfy.sh`, a host named `ntfy.…`, or a URL with
//! ntfy's `tpl` parameter) it is one line of plain text, without control characters, fit
//! for a title; any other webhook gets the JSON as serde writes it (no HTML is made
//! anywhere).
//!
//! A webhook URL may hold a secret (Slack's do): only its host is ever logged.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::error::{Error, Result};
use crate::view::TeamView;
use swarm_store::approvals::Kind;
use swarm_util::clock;
use swarm_util::error::Base as _;
use swarm_util::names::LEAD;

/// The share of the budget past which `budget_80` is sent.
const BUDGET_SHARE: f64 = 0.8;
/// Posts in flight at once; more wait their turn.
const IN_FLIGHT: usize = 8;
/// One post's time limit.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// One notification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// `approval_waiting`, `teammate_died`, `budget_80`, `merge_held` or `run_ended`.
    pub event: &'static str,
    pub team: String,
    /// One line for people: `[team] bob asks to approve a plan: …`.
    pub text: String,
    /// The page's address (never with the token).
    pub link: String,
    /// When it was noticed (RFC 3339).
    pub at: String,
    /// The event's own facts (the request, the member, the branch...).
    pub detail: Value,
}

/// What a webhook URL is, by its host and query: how an event's text is made safe for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Slack,
    Ntfy,
    Webhook,
}

impl Target {
    pub fn of(url: &reqwest::Url) -> Target {
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let ntfy_query = url.query_pairs().any(|(k, _)| k == "tpl");
        if host == "hooks.slack.com" {
            Target::Slack
        } else if host == "ntfy.sh" || host.starts_with("ntfy.") || ntfy_query {
            Target::Ntfy
        } else {
            Target::Webhook
        }
    }

    /// `text` as this target should get it.
    pub fn escape(self, text: &str) -> String {
        match self {
            Target::Slack => text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;"),
            Target::Ntfy => one_line(text),
            Target::Webhook => text.to_owned(),
        }
    }

    /// The JSON body of `event` for this target.
    pub fn body(self, event: &Event) -> Vec<u8> {
        let event = Event {
            text: self.escape(&event.text),
            ..event.clone()
        };
        serde_json::to_vec(&event).expect("plain data serializes")
    }
}

/// `text` on one line: each run of whitespace or control characters becomes one space.
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Sends events to the `--notify` URLs.
pub struct Notifier {
    urls: Vec<reqwest::Url>,
    client: reqwest::Client,
    link: String,
    sent: Mutex<HashSet<String>>,
    slots: Arc<Semaphore>,
    backoff: Vec<Duration>,
    runtime: tokio::runtime::Handle,
}

impl Notifier {
    /// `urls` must be http(s) URLs; `link` is the page's address; `backoff` the waits
    /// before each retry (its length is the number of retries).
    pub fn new(
        urls: &[String],
        link: String,
        backoff: Vec<Duration>,
        runtime: tokio::runtime::Handle,
    ) -> Result<Notifier> {
        let urls = urls
            .iter()
            .map(|u| {
                reqwest::Url::parse(u)
                    .ok()
                    .filter(|p| matches!(p.scheme(), "http" | "https") && p.host_str().is_some())
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "--notify {:?} is not an http(s) URL; give a webhook's address, e.g. https://ntfy.sh/my-topic",
                            host_only(u)
                        ))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        swarm_llm::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(POST_TIMEOUT)
            .connect_timeout(POST_TIMEOUT)
            .build()
            .map_err(|e| Error::Serve(format!("failed to build the webhook client: {e}")))?;
        Ok(Notifier {
            urls,
            client,
            link,
            sent: Mutex::new(HashSet::new()),
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
            backoff,
            runtime,
        })
    }

    /// Sends what is new in `now` since `before` (`None`: the first view of the team).
    pub fn observe(&self, before: Option<&TeamView>, now: &TeamView) {
        for (key, mut event) in events(before, now) {
            if !self
                .sent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key)
            {
                continue;
            }
            event.link = format!("{}#{}", self.link, event.team);
            for url in &self.urls {
                let body = Arc::new(Target::of(url).body(&event));
                let post = post(
                    self.client.clone(),
                    url.clone(),
                    body,
                    self.backoff.clone(),
                    Arc::clone(&self.slots),
                );
                self.runtime.spawn(post);
            }
        }
    }
}

/// Posts `body` to `url`, retrying as the module comment says.
async fn post(
    client: reqwest::Client,
    url: reqwest::Url,
    body: Arc<Vec<u8>>,
    backoff: Vec<Duration>,
    slots: Arc<Semaphore>,
) {
    let Ok(_slot) = slots.acquire_owned().await else {
        return;
    };
    let host = url.host_str().unwrap_or("?").to_owned();
    let waits = std::iter::once(Duration::ZERO).chain(backoff);
    for (attempt, wait) in waits.enumerate() {
        tokio::time::sleep(wait).await;
        let sent = client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec())
            .send()
            .await;
        let why = match sent {
            Ok(r) if r.status().is_success() => return,
            Ok(r) => {
                let status = r.status();
                let retry = status.is_server_error() || matches!(status.as_u16(), 408 | 429);
                if !retry {
                    tracing::warn!(
                        "the webhook at {host} refused a notification ({status}); not retrying"
                    );
                    return;
                }
                status.to_string()
            }
            Err(e) => e.without_url().to_string(),
        };
        tracing::warn!(
            "failed to notify the webhook at {host} (attempt {}): {why}",
            attempt + 1
        );
    }
    tracing::warn!("gave up notifying the webhook at {host}");
}

/// A URL's scheme and host, the only part of it ever shown.
fn host_only(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!("{}://{}/…", u.scheme(), u.host_str().unwrap_or("")),
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// The events between two views of a team, each with its key (see the module comment).
pub fn events(before: Option<&TeamView>, now: &TeamView) -> Vec<(String, Event)> {
    let team = now.team.as_str();
    let event = |event, text: String, detail: Value| Event {
        event,
        team: team.to_owned(),
        text: format!("[{team}] {text}"),
        link: String::new(),
        at: clock::now_iso(),
        detail,
    };
    let mut out = Vec::new();
    for a in &now.approvals {
        let what = match a.kind {
            Kind::Plan => "to approve a plan",
            Kind::Permission => "for permission",
        };
        out.push((
            format!("{team}/approval/{}", a.request_id),
            event(
                "approval_waiting",
                format!("{} asks {what}: {}", a.agent, a.summary),
                json!({"requestId": a.request_id, "agent": a.agent, "kind": a.kind, "summary": a.summary}),
            ),
        ));
    }
    let Some(before) = before else {
        return out;
    };
    for m in &now.members {
        let s = &m.status;
        let was = before.member(&s.name).map(|b| b.status.state.as_str());
        let ended = matches!(s.state.as_str(), "dead" | "exited");
        if !ended || was.is_none_or(|w| matches!(w, "dead" | "exited")) {
            continue;
        }
        let why = s.detail.clone().unwrap_or_default();
        let pid = s.pid.unwrap_or(0);
        if s.name == LEAD {
            out.push((
                format!("{team}/ended/{pid}"),
                event(
                    "run_ended",
                    format!("the run ended: {why}"),
                    json!({"state": s.state, "reason": why}),
                ),
            ));
        } else if s.state == "dead" {
            out.push((
                format!("{team}/died/{}/{pid}", s.name),
                event(
                    "teammate_died",
                    format!("{} died: {why}", s.name),
                    json!({"member": s.name, "reason": why, "lastError": s.last_error}),
                ),
            ));
        }
    }
    let share = |v: &TeamView| v.budget.as_ref().and_then(|b| b.share).unwrap_or(0.0);
    if share(now) >= BUDGET_SHARE && share(before) < BUDGET_SHARE {
        let line = now
            .budget
            .as_ref()
            .map(|b| b.line.clone())
            .unwrap_or_default();
        out.push((
            format!("{team}/budget80"),
            event(
                "budget_80",
                format!("the budget is past 80 % ({line})"),
                json!({"share": share(now), "line": line}),
            ),
        ));
    }
    for e in now.merge_queue.iter().filter(|e| e.state.held()) {
        let held_before = before
            .merge_queue
            .iter()
            .any(|b| b.branch == e.branch && b.head == e.head && b.state == e.state);
        if held_before {
            continue;
        }
        out.push((
            format!("{team}/held/{}/{}/{}", e.branch, e.head, e.state.as_str()),
            event(
                "merge_held",
                format!("the merge queue held {} ({}): {}", e.branch, e.agent, e.state.as_str()),
                json!({"branch": e.branch, "agent": e.agent, "state": e.state, "conflicts": e.conflicts}),
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{BudgetView, MemberView};
    use swarm_store::approvals::{Approval, State};
    use swarm_store::merge_queue::{Entry, EntryState};
    use swarm_team::life::status::MemberStatus;

    fn member(name: &str, state: &str, pid: i32) -> MemberView {
        MemberView {
            status: MemberStatus {
                name: name.into(),
                agent_id: format!("{name}@t"),
                color: None,
                agent_type: None,
                model: None,
                provider: None,
                engine: "swarm".into(),
                pid: Some(pid),
                host: None,
                token: None,
                pane: None,
                alive: state != "dead" && state != "exited",
                pane_alive: None,
                state: state.into(),
                detail: Some(format!("{name} is {state}")),
                current_task: None,
                last_activity_ms: None,
                mode: None,
                usage: Default::default(),
                cost_usd: 0.0,
                model_calls: 0,
                exit_code: None,
                transcript: None,
                rate_limited_until: None,
                rate_limit_reason: None,
                last_error: None,
                pane_record: None,
                state_file: None,
            },
            provider: None,
            host: None,
        }
    }

    fn view(members: Vec<MemberView>) -> TeamView {
        TeamView {
            team: "t".into(),
            description: None,
            tmux_reachable: true,
            members,
            tasks: Vec::new(),
            feed: Vec::new(),
            approvals: Vec::new(),
            merge_queue: Vec::new(),
            budget: None,
            problems: Vec::new(),
        }
    }

    fn budget(share: f64) -> Option<BudgetView> {
        Some(BudgetView {
            limits: Default::default(),
            spent: Default::default(),
            share: Some(share),
            line: format!("{:.0} %", share * 100.0),
        })
    }

    fn entry(state: EntryState) -> Entry {
        Entry {
            agent: "bob".into(),
            branch: "swarm/t/bob".into(),
            task: None,
            base: "a".into(),
            head: "b".into(),
            state,
            queued_at: 0,
            updated_at: 0,
            conflicts: vec!["src/lib.rs".into()],
            check_output: None,
            merged_commit: None,
            handed_back: None,
        }
    }

    fn kinds(events: &[(String, Event)]) -> Vec<&'static str> {
        events.iter().map(|(_, e)| e.event).collect()
    }

    #[test]
    fn only_changes_are_news_except_a_request_that_waits() {
        let mut first = view(vec![
            member("team-lead", "working", 1),
            member("bob", "dead", 2),
        ]);
        first.budget = budget(0.9);
        first.merge_queue = vec![entry(EntryState::Conflict)];
        first.approvals = vec![Approval {
            request_id: "perm-1-a".into(),
            kind: swarm_store::approvals::Kind::Permission,
            agent: "carol".into(),
            state: State::Pending,
            created_ms: 0,
            resolved_ms: None,
            resolved_by: None,
            resolved_via: None,
            summary: "Bash: ls".into(),
            detail: serde_json::Value::Null,
            feedback: None,
            mode: None,
        }];
        // What was so when the server started is not news; a waiting request is.
        let at_start = events(None, &first);
        assert_eq!(kinds(&at_start), ["approval_waiting"]);
        assert_eq!(
            at_start[0].1.text,
            "[t] carol asks for permission: Bash: ls"
        );
        // Nothing changed: the same keys again (the notifier sends each key once).
        let again = events(Some(&first), &first);
        assert_eq!(kinds(&again), ["approval_waiting"]);
        assert_eq!(again[0].0, at_start[0].0);
    }

    #[test]
    fn deaths_the_runs_end_the_budget_and_held_merges_are_told_when_they_happen() {
        let mut before = view(vec![
            member("team-lead", "working", 1),
            member("bob", "working", 2),
            member("carol", "working", 3),
        ]);
        before.budget = budget(0.5);
        before.merge_queue = vec![entry(EntryState::Checking)];
        // carol exits by herself: that is no death.
        let mut after = view(vec![
            member("team-lead", "exited", 1),
            member("bob", "dead", 2),
            member("carol", "exited", 3),
        ]);
        after.budget = budget(0.85);
        after.merge_queue = vec![entry(EntryState::CheckFailed)];
        let news = events(Some(&before), &after);
        assert_eq!(
            kinds(&news),
            ["run_ended", "teammate_died", "budget_80", "merge_held"]
        );
        assert_eq!(news[1].1.text, "[t] bob died: bob is dead");
        assert_eq!(news[1].0, "t/died/bob/2");
        assert!(news[3].1.text.contains("swarm/t/bob"), "{}", news[3].1.text);
        // What was told is not told again; a budget already past 80 % is old news.
        let mut later = after.clone();
        later.budget = budget(0.95);
        assert!(events(Some(&after), &later).is_empty());
    }

    #[test]
    fn each_target_gets_text_it_cannot_misread() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let slack = Target::of(&url("https://hooks.slack.com/services/T0/B0/X"));
        let ntfy = Target::of(&url("https://ntfy.sh/topic?tpl=1&m={{.text}}"));
        let own_ntfy = Target::of(&url("https://push.example/topic?tpl=1"));
        let hook = Target::of(&url("https://hooks.example/in"));
        assert_eq!(
            (slack, ntfy, own_ntfy, hook),
            (Target::Slack, Target::Ntfy, Target::Ntfy, Target::Webhook)
        );
        let text = "[t] bob asks for permission: <!channel> <@U123> ping & <https://evil|docs>\n\tline\u{7}two";
        assert_eq!(
            slack.escape(text),
            "[t] bob asks for permission: &lt;!channel&gt; &lt;@U123&gt; ping &amp; &lt;https://evil|docs&gt;\n\tline\u{7}two"
        );
        assert_eq!(
            ntfy.escape(text),
            "[t] bob asks for permission: <!channel> <@U123> ping & <https://evil|docs> line two"
        );
        let event = Event {
            event: "approval_waiting",
            team: "t".into(),
            text: text.into(),
            link: "http://127.0.0.1:8484/#t".into(),
            at: "2026-01-01T00:00:00Z".into(),
            detail: json!({"summary": "<!channel>"}),
        };
        // Slack's body has no `<` left in its text; a plain webhook gets the text as it is,
        // in JSON that reads back to it.
        let body: Value = serde_json::from_slice(&slack.body(&event)).unwrap();
        assert!(!body["text"].as_str().unwrap().contains('<'), "{body}");
        let body: Value = serde_json::from_slice(&hook.body(&event)).unwrap();
        assert_eq!(body["text"], text);
        assert_eq!(body["detail"]["summary"], "<!channel>");
        let body: Value = serde_json::from_slice(&ntfy.body(&event)).unwrap();
        assert!(!body["text"].as_str().unwrap().contains('\n'), "{body}");
    }
}
