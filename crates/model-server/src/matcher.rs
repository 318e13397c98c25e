//! Matching requests to a script's rules: the [`RequestView`] a rule sees of an Anthropic
//! or OpenAI request, the [`Matcher`] that picks the rule for each request and counts its
//! `times`, and the filling of a reply's `{{name}}` placeholders from the captures.
//!
//! Invariants:
//! - Rules are tried in script order; the first whose conditions all hold, whose `times`
//!   is not used up and whose `chance` comes up (always, within its burst) fires, and each
//!   firing uses one time, fault or reply alike.
//! - Every random draw (chance, delay ranges) comes from one generator seeded by the
//!   script's `seed`, so a given seed and order of requests repeat them.
//! - When no rule fires the default answers; without one the outcome is
//!   [`Outcome::Unmatched`], with no reply.
//! - Both API shapes give the same view of the same conversation: the latest user turn's
//!   text and tool results, joined by newlines.
//! - Placeholders are filled in every string of a reply, tool names and inputs included;
//!   `{{agent}}` is always set, and unknown names stay as written.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::script::{Compiled, FaultKind, Reply, Rule, Script, Thinking, ToolCall};

/// What a rule can see of a request, whichever API shape it came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestView {
    pub agent: Option<String>,
    pub system: String,
    /// The latest user turn: text blocks and tool result contents, joined by newlines.
    pub user_text: String,
    /// The latest user turn's tool result contents only.
    pub tool_result_text: String,
    pub has_tool_result: bool,
}

/// The text of a content value that is a string or a list of blocks with `text`.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl RequestView {
    /// A Messages API request body.
    pub fn anthropic(body: &Value, agent: Option<&str>) -> RequestView {
        let mut view = RequestView {
            agent: agent.map(str::to_string),
            system: body.get("system").map(text_of).unwrap_or_default(),
            ..RequestView::default()
        };
        let last_user = body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|ms| {
                ms.iter()
                    .rev()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            });
        let Some(content) = last_user.and_then(|m| m.get("content")) else {
            return view;
        };
        let mut texts = Vec::new();
        let mut results = Vec::new();
        match content {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(blocks) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => texts.push(text_of(b.get("text").unwrap_or(&Value::Null))),
                        Some("tool_result") => {
                            let t = b.get("content").map(text_of).unwrap_or_default();
                            texts.push(t.clone());
                            results.push(t);
                            view.has_tool_result = true;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        view.user_text = texts.join("\n");
        view.tool_result_text = results.join("\n");
        view
    }

    /// A chat completions request body: the latest user turn is every `user` and `tool`
    /// message after the last `assistant` message.
    pub fn openai(body: &Value, agent: Option<&str>) -> RequestView {
        let empty = Vec::new();
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let role = |m: &Value| {
            m.get("role")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let system = messages
            .iter()
            .filter(|m| matches!(role(m).as_str(), "system" | "developer"))
            .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
            .collect::<Vec<_>>()
            .join("\n");
        let start = messages
            .iter()
            .rposition(|m| role(m) == "assistant")
            .map_or(0, |i| i + 1);
        let mut view = RequestView {
            agent: agent.map(str::to_string),
            system,
            ..RequestView::default()
        };
        let mut texts = Vec::new();
        let mut results = Vec::new();
        for m in &messages[start..] {
            let t = text_of(m.get("content").unwrap_or(&Value::Null));
            match role(m).as_str() {
                "user" => texts.push(t),
                "tool" => {
                    texts.push(t.clone());
                    results.push(t);
                    view.has_tool_result = true;
                }
                _ => {}
            }
        }
        view.user_text = texts.join("\n");
        view.tool_result_text = results.join("\n");
        view
    }
}

/// What the script says to do with one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub outcome: Outcome,
    /// The reply with placeholders filled in; `None` only when unmatched.
    pub reply: Option<Reply>,
    pub fault: Option<FaultKind>,
    pub delay: Duration,
}

/// Which part of the script answered a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A rule, by its label.
    Rule(String),
    Default,
    /// No rule fired and there is no default.
    Unmatched,
    /// The request body was not JSON.
    Invalid(String),
}

impl Outcome {
    /// How a log names it: the rule's label, `(default)`, `(unmatched)` or `(invalid)`.
    pub fn label(&self) -> &str {
        match self {
            Outcome::Rule(label) => label,
            Outcome::Default => "(default)",
            Outcome::Unmatched => "(unmatched)",
            Outcome::Invalid(_) => "(invalid)",
        }
    }
}

/// A script with its regexes compiled, its `times` counters and its rules' bursts.
#[derive(Debug)]
pub struct Matcher {
    script: Script,
    regexes: Vec<Option<regex::Regex>>,
    faults: Vec<Option<FaultKind>>,
    used: Vec<u32>,
    /// Until when each rule with `burst_ms` keeps firing without a draw.
    burst_until: Vec<Option<Instant>>,
    rng: fastrand::Rng,
}

impl Matcher {
    /// Validates the script; errors name the rule.
    pub fn new(script: Script) -> std::result::Result<Matcher, String> {
        let Compiled { regexes, faults } = script.compile()?;
        let rng = script
            .seed
            .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
        Ok(Matcher {
            used: vec![0; script.rules.len()],
            burst_until: vec![None; script.rules.len()],
            script,
            regexes,
            faults,
            rng,
        })
    }

    /// Picks the answer for a request, using up one of the chosen rule's `times`.
    pub fn select(&mut self, view: &RequestView) -> Selection {
        self.select_at(view, Instant::now())
    }

    /// [`Matcher::select`] for a request that arrived at `now` (bursts are timed from it).
    pub fn select_at(&mut self, view: &RequestView, now: Instant) -> Selection {
        let mut vars = BTreeMap::new();
        vars.insert("agent".to_string(), view.agent.clone().unwrap_or_default());
        for (i, rule) in self.script.rules.iter().enumerate() {
            if rule.times.is_some_and(|t| self.used[i] >= t) {
                continue;
            }
            let Some(captures) = conditions_hold(rule, self.regexes[i].as_ref(), view) else {
                continue;
            };
            let in_burst = self.burst_until[i].is_some_and(|until| now < until);
            if !in_burst && rule.chance.is_some_and(|p| self.rng.f64() >= p) {
                continue;
            }
            if !in_burst && let Some(ms) = rule.burst_ms {
                self.burst_until[i] = Some(now + Duration::from_millis(ms));
            }
            self.used[i] += 1;
            vars.extend(captures);
            let reply = rule
                .reply
                .as_ref()
                .or(self.script.default.as_ref())
                .cloned()
                .unwrap_or_else(|| Reply::text("OK."));
            return Selection {
                outcome: Outcome::Rule(rule.label(i)),
                reply: Some(reply.substitute(&vars)),
                fault: self.faults[i].clone(),
                delay: rule
                    .delay_ms
                    .map_or(Duration::ZERO, |d| d.draw(&mut self.rng)),
            };
        }
        match &self.script.default {
            Some(d) => Selection {
                outcome: Outcome::Default,
                reply: Some(d.substitute(&vars)),
                fault: None,
                delay: Duration::ZERO,
            },
            None => Selection {
                outcome: Outcome::Unmatched,
                reply: None,
                fault: None,
                delay: Duration::ZERO,
            },
        }
    }
}

/// The named captures when every condition of `rule` holds.
fn conditions_hold(
    rule: &Rule,
    regex: Option<&regex::Regex>,
    view: &RequestView,
) -> Option<BTreeMap<String, String>> {
    let contains = |hay: &str, needle: &Option<String>| {
        needle.as_ref().is_none_or(|n| hay.contains(n.as_str()))
    };
    if let Some(agent) = &rule.agent
        && view.agent.as_deref() != Some(agent.as_str())
    {
        return None;
    }
    if !contains(&view.system, &rule.system_contains)
        || !contains(&view.user_text, &rule.user_contains)
        || !contains(&view.tool_result_text, &rule.tool_result_contains)
    {
        return None;
    }
    if let Some(fresh) = rule.no_tool_result
        && fresh == view.has_tool_result
    {
        return None;
    }
    let mut vars = BTreeMap::new();
    if let Some(re) = regex {
        let caps = re.captures(&view.user_text)?;
        for name in re.capture_names().flatten() {
            vars.insert(
                name.to_string(),
                caps.name(name).map_or("", |m| m.as_str()).to_string(),
            );
        }
    }
    Some(vars)
}

impl Reply {
    /// The reply with `{{name}}` placeholders replaced in every string.
    pub fn substitute(&self, vars: &BTreeMap<String, String>) -> Reply {
        let s = |t: &String| substitute(t, vars);
        Reply {
            text: self.text.as_ref().map(s),
            thinking: self.thinking.as_ref().map(|t| Thinking {
                thinking: s(&t.thinking),
                signature: s(&t.signature),
            }),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|c| ToolCall {
                    name: s(&c.name),
                    input: substitute_value(&c.input, vars),
                    id: c.id.as_ref().map(s),
                })
                .collect(),
            stop_reason: self.stop_reason.as_ref().map(s),
            raw: self.raw.clone(),
            usage: self.usage,
        }
    }
}

/// Replaces `{{name}}` (spaces inside the braces allowed) by its value; unknown names stay.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if vars.contains_key(after[..end].trim()) => {
                out.push_str(&vars[after[..end].trim()]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn substitute_value(v: &Value, vars: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, vars)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute_value(x, vars)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (substitute(k, vars), substitute_value(x, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Fault;
    use serde_json::json;

    fn view(agent: &str, user: &str, tool: Option<&str>) -> RequestView {
        RequestView {
            agent: Some(agent.into()),
            system: "You are bob.".into(),
            user_text: match tool {
                Some(t) => format!("{t}\n{user}"),
                None => user.into(),
            },
            tool_result_text: tool.unwrap_or_default().into(),
            has_tool_result: tool.is_some(),
        }
    }

    #[test]
    fn rules_fire_in_order_and_times_run_out() {
        let script = Script::new()
            .rule(Rule::new("busy").times(1).fault(Fault::status(529)))
            .rule(
                Rule::new("bob only")
                    .agent("bob")
                    .reply(Reply::text("hi bob")),
            )
            .default_reply(Reply::text("default for {{agent}}"));
        let mut m = Matcher::new(script).unwrap();
        let s = m.select(&view("bob", "x", None));
        assert_eq!(s.outcome, Outcome::Rule("busy".into()));
        assert!(matches!(s.fault, Some(FaultKind::Http { status: 529, .. })));
        let s = m.select(&view("bob", "x", None));
        assert_eq!(s.outcome, Outcome::Rule("bob only".into()));
        assert_eq!(s.reply.unwrap().text.unwrap(), "hi bob");
        let s = m.select(&view("alice", "x", None));
        assert_eq!(s.outcome, Outcome::Default);
        assert_eq!(s.reply.unwrap().text.unwrap(), "default for alice");
        let mut bare = Matcher::new(Script::new()).unwrap();
        assert_eq!(
            bare.select(&view("a", "b", None)).outcome,
            Outcome::Unmatched
        );
    }

    #[test]
    fn conditions_and_captures() {
        let rule = Rule::new("approve")
            .system_contains("bob")
            .user_regex(r#"requestId":"(?P<rid>[^"]+)""#)
            .reply(
                Reply::text("approving {{ rid }} for {{agent}}, {{unknown}}").tool_call(
                    "SendMessage",
                    json!({"to": "x", "message": {"request_id": "{{rid}}", "list": ["{{rid}}", 3]}}),
                ),
            );
        let mut m = Matcher::new(Script::new().rule(rule)).unwrap();
        let s = m.select(&view("lead", r#"{"requestId":"req-7"}"#, None));
        let reply = s.reply.unwrap();
        assert_eq!(reply.text.unwrap(), "approving req-7 for lead, {{unknown}}");
        assert_eq!(
            reply.tool_calls[0].input,
            json!({"to": "x", "message": {"request_id": "req-7", "list": ["req-7", 3]}})
        );
        assert_eq!(
            m.select(&view("lead", "nothing", None)).outcome,
            Outcome::Unmatched
        );

        let mut m = Matcher::new(
            Script::new()
                .rule(Rule::new("fresh").no_tool_result(true))
                .rule(Rule::new("after ls").tool_result_contains("file.txt"))
                .rule(Rule::new("after tool").no_tool_result(false)),
        )
        .unwrap();
        assert_eq!(
            m.select(&view("a", "go", None)).outcome,
            Outcome::Rule("fresh".into())
        );
        assert_eq!(
            m.select(&view("a", "go", Some("file.txt"))).outcome,
            Outcome::Rule("after ls".into())
        );
        // user_contains sees tool results too, tool_result_contains sees only them.
        assert_eq!(
            m.select(&view("a", "file.txt", Some("other"))).outcome,
            Outcome::Rule("after tool".into())
        );
    }

    #[test]
    fn delay_ranges_are_drawn_per_request_within_bounds_and_repeat_for_a_seed() {
        let script = Script::new()
            .seed(11)
            .rule(Rule::new("slow").delay_between_ms(10, 500));
        let draws = |script: &Script| {
            let mut m = Matcher::new(script.clone()).unwrap();
            (0..200)
                .map(|_| m.select(&view("a", "x", None)).delay.as_millis() as u64)
                .collect::<Vec<_>>()
        };
        let first = draws(&script);
        assert!(first.iter().all(|d| (10..=500).contains(d)), "{first:?}");
        assert!(first.iter().any(|d| *d < 100) && first.iter().any(|d| *d > 400));
        assert_eq!(first, draws(&script));
        let mut fixed = Matcher::new(Script::new().rule(Rule::new("f").delay_ms(7))).unwrap();
        assert_eq!(
            fixed.select(&view("a", "x", None)).delay,
            Duration::from_millis(7)
        );
    }

    #[test]
    fn a_rule_with_a_chance_fires_that_often_and_otherwise_lets_the_next_rule_answer() {
        let script = |p: f64| {
            Script::new()
                .seed(3)
                .rule(Rule::new("busy").chance(p).fault(Fault::status(529)))
                .rule(Rule::new("ok").reply(Reply::text("fine")))
        };
        let busy = |p: f64| {
            let mut m = Matcher::new(script(p)).unwrap();
            (0..1000)
                .filter(|_| m.select(&view("a", "x", None)).outcome == Outcome::Rule("busy".into()))
                .count()
        };
        assert_eq!(busy(0.0), 0);
        assert_eq!(busy(1.0), 1000);
        let some = busy(0.1);
        assert!((50..=150).contains(&some), "{some} of 1000 at chance 0.1");
    }

    #[test]
    fn a_burst_keeps_firing_for_its_duration_then_draws_again() {
        let mut m = Matcher::new(
            Script::new()
                .seed(5)
                .rule(
                    Rule::new("burst")
                        .chance(0.05)
                        .burst_ms(1000)
                        .fault(Fault::status(429)),
                )
                .rule(Rule::new("ok")),
        )
        .unwrap();
        let t0 = Instant::now();
        // A request every 100 ms for 10 minutes.
        let fired: Vec<bool> = (0..6000u64)
            .map(|k| {
                let at = t0 + Duration::from_millis(100 * k);
                m.select_at(&view("a", "x", None), at).outcome == Outcome::Rule("burst".into())
            })
            .collect();
        let starts: Vec<usize> = (0..fired.len())
            .filter(|&k| fired[k] && (k == 0 || !fired[k - 1]))
            .collect();
        assert!(starts.len() > 5, "too few bursts: {}", starts.len());
        for &k in &starts {
            // Every request within the second after the first one fires too.
            let run = fired[k..].iter().take_while(|f| **f).count();
            assert!(
                run >= 10 || k + run == fired.len(),
                "a burst of {run} at {k}"
            );
        }
        let share = fired.iter().filter(|f| **f).count() as f64 / fired.len() as f64;
        assert!(share < 0.9, "bursts must end: {share}");
    }

    #[test]
    fn views_of_both_api_shapes() {
        let anthropic = json!({
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "res"}]},
                    {"type": "text", "text": "more"}
                ]}
            ]
        });
        let v = RequestView::anthropic(&anthropic, Some("bob"));
        assert_eq!(v.system, "sys");
        assert_eq!(v.user_text, "res\nmore");
        assert_eq!(v.tool_result_text, "res");
        assert!(v.has_tool_result);
        let openai = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c", "content": "res"},
            {"role": "user", "content": "more"}
        ]});
        assert_eq!(RequestView::openai(&openai, Some("bob")), v);
        let fresh = RequestView::anthropic(
            &json!({"messages": [{"role": "user", "content": "hi"}]}),
            None,
        );
        assert_eq!(fresh.user_text, "hi");
        assert!(!fresh.has_tool_result);
    }
}
