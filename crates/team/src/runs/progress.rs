//! What a waiting `swarm run` tells about its team as it works: from the team's own files
//! (the roster, each agent's state, the tasks, the approvals), never from the lead, a look
//! at a time ([`look`]); what changed between two looks becomes events ([`changes`]), one
//! per change, each said as a plain line for people ([`Event::line`]) or as a JSON object
//! for scripts ([`Event::json`]).
//!
//! The phase is read off the lead's state and the task board: starting, planning (no task
//! yet), working, finishing (every task done), stalled (the lead said so: nobody works
//! and tasks are open), waiting for the rate limit, shutting the team down.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::life::status::{self, MemberStatus, TeamStatus};
use swarm_store::Store;
use swarm_store::approvals::{Kind, State};
use swarm_store::state::Activity;
use swarm_tmux::Tmux;
use swarm_util::clock;
use swarm_util::names::LEAD;

/// One look at the team, reduced to what progress reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every teammate (not the lead): whether it has stopped, and how.
    teammates: BTreeMap<String, Option<Stopped>>,
    done: usize,
    total: usize,
    /// Pending approvals: request id, who asks, and for what.
    approvals: Vec<Waiting>,
    phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stopped {
    /// `exited` (it stopped cleanly) or `dead`.
    pub state: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub request_id: String,
    pub agent: String,
    pub kind: &'static str,
}

/// Something that happened to a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Started {
        team: String,
    },
    Spawned {
        name: String,
    },
    Stopped {
        name: String,
        how: Stopped,
    },
    Tasks {
        done: usize,
        total: usize,
    },
    Approvals {
        waiting: Vec<Waiting>,
    },
    Phase {
        phase: String,
    },
    /// The lead finished: its exit code, the result it recorded, and the report.
    Ended {
        code: u8,
        result: Option<String>,
        report: String,
    },
}

impl Event {
    /// The event for people, on one line.
    pub fn line(&self) -> String {
        match self {
            Event::Started { team } => format!(
                "team {team} started; its window: `swarm attach {team}`; live view: `swarm watch {team}`"
            ),
            Event::Spawned { name } => format!("teammate {name} spawned"),
            Event::Stopped { name, how } => {
                let verb = if how.state == "exited" {
                    "stopped"
                } else {
                    "died"
                };
                match &how.reason {
                    Some(r) => format!("teammate {name} {verb}: {r}"),
                    None => format!("teammate {name} {verb}"),
                }
            }
            Event::Tasks { done, total } => format!("tasks: {done}/{total} done"),
            Event::Approvals { waiting } if waiting.is_empty() => {
                "approvals: none waiting".to_owned()
            }
            Event::Approvals { waiting } => format!(
                "approvals waiting: {} (`swarm approvals --pending`; `swarm approve <id>`)",
                waiting
                    .iter()
                    .map(|w| format!("{}'s {} {}", w.agent, w.kind, w.request_id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Event::Phase { phase } => format!("phase: {phase}"),
            Event::Ended { code, result, .. } => format!(
                "run ended with exit code {code}{}",
                result
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// The event for scripts: an object with its `type` and `time` (ISO 8601, UTC).
    pub fn json(&self, time: &str) -> Value {
        let mut v = match self {
            Event::Started { team } => json!({"type": "team_started", "team": team}),
            Event::Spawned { name } => json!({"type": "teammate_spawned", "name": name}),
            Event::Stopped { name, how } => json!({
                "type": "teammate_stopped",
                "name": name,
                "state": how.state,
                "reason": how.reason,
            }),
            Event::Tasks { done, total } => json!({"type": "tasks", "done": done, "total": total}),
            Event::Approvals { waiting } => json!({
                "type": "approvals",
                "waiting": waiting.len(),
                "requests": waiting
                    .iter()
                    .map(|w| json!({"requestId": w.request_id, "agent": w.agent, "kind": w.kind}))
                    .collect::<Vec<_>>(),
            }),
            Event::Phase { phase } => json!({"type": "phase", "phase": phase}),
            Event::Ended {
                code,
                result,
                report,
            } => json!({"type": "run_ended", "code": code, "result": result, "report": report}),
        };
        v["time"] = json!(time);
        v
    }

    /// [`Event::json`] stamped now.
    pub fn json_now(&self) -> Value {
        self.json(&clock::now_iso())
    }
}

/// Looks at the team; `None` when its roster cannot be read (it is being made or deleted).
pub fn look(store: &Store, tmux: Option<&Tmux>) -> Option<Snapshot> {
    let seen = status::observe(store, tmux).ok()?;
    let approvals = store
        .approvals()
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.state == State::Pending)
        .map(|a| Waiting {
            request_id: a.request_id,
            agent: a.agent,
            kind: match a.kind {
                Kind::Plan => "plan",
                Kind::Permission => "permission",
            },
        })
        .collect();
    Some(snapshot(&seen, approvals))
}

fn snapshot(seen: &TeamStatus, approvals: Vec<Waiting>) -> Snapshot {
    let teammates = seen
        .members
        .iter()
        .filter(|m| m.name != LEAD)
        .map(|m| {
            let stopped = matches!(m.state.as_str(), "dead" | "exited").then(|| Stopped {
                state: m.state.clone(),
                reason: m.last_error.clone().or_else(|| m.detail.clone()),
            });
            (m.name.clone(), stopped)
        })
        .collect();
    let (done, total) = (
        seen.tasks.completed,
        seen.tasks.pending + seen.tasks.in_progress + seen.tasks.completed,
    );
    Snapshot {
        teammates,
        done,
        total,
        approvals,
        phase: phase(seen.member(LEAD), done, total),
    }
}

/// The run's phase, from the lead's state and the task board; `None` once the lead is gone.
fn phase(lead: Option<&MemberStatus>, done: usize, total: usize) -> Option<String> {
    let lead = lead?;
    let own = lead.state_file.as_ref()?;
    let phase = match own.activity {
        Activity::Exited => return None,
        Activity::Starting => "starting".to_owned(),
        Activity::ShuttingDown => "shutting the team down".to_owned(),
        _ if lead.rate_limited_until.is_some() => lead.detail.clone()?,
        _ => match &own.detail {
            Some(d) if d.starts_with("stalled") => d.clone(),
            _ if total == 0 => "planning".to_owned(),
            _ if done < total => "working".to_owned(),
            _ => "finishing".to_owned(),
        },
    };
    Some(phase)
}

/// What changed from `before` (nothing, at the first look) to `after`.
pub fn changes(before: Option<&Snapshot>, after: &Snapshot) -> Vec<Event> {
    let empty = Snapshot::default();
    let before = before.unwrap_or(&empty);
    let mut events = Vec::new();
    for (name, stopped) in &after.teammates {
        let was = before.teammates.get(name);
        if was.is_none() {
            events.push(Event::Spawned { name: name.clone() });
        }
        if let Some(how) = stopped
            && was.is_none_or(|w| w.is_none())
        {
            events.push(Event::Stopped {
                name: name.clone(),
                how: how.clone(),
            });
        }
    }
    if (after.done, after.total) != (before.done, before.total) && after.total > 0 {
        events.push(Event::Tasks {
            done: after.done,
            total: after.total,
        });
    }
    if after.approvals != before.approvals {
        events.push(Event::Approvals {
            waiting: after.approvals.clone(),
        });
    }
    if let Some(phase) = &after.phase
        && after.phase != before.phase
    {
        events.push(Event::Phase {
            phase: phase.clone(),
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(teammates: &[(&str, Option<&str>)], done: usize, total: usize) -> Snapshot {
        Snapshot {
            teammates: teammates
                .iter()
                .map(|(n, s)| {
                    (
                        n.to_string(),
                        s.map(|s| Stopped {
                            state: s.to_owned(),
                            reason: Some("why".to_owned()),
                        }),
                    )
                })
                .collect(),
            done,
            total,
            approvals: Vec::new(),
            phase: Some(if total == 0 { "planning" } else { "working" }.to_owned()),
        }
    }

    #[test]
    fn each_change_is_one_event_and_an_unchanged_team_none() {
        let first = snap(&[], 0, 0);
        assert_eq!(
            changes(None, &first),
            [Event::Phase {
                phase: "planning".into()
            }]
        );
        assert!(changes(Some(&first), &first).is_empty());
        let second = snap(&[("bob", None)], 0, 2);
        let lines: Vec<String> = changes(Some(&first), &second)
            .iter()
            .map(Event::line)
            .collect();
        assert_eq!(
            lines,
            ["teammate bob spawned", "tasks: 0/2 done", "phase: working"]
        );
        let third = snap(&[("bob", Some("dead"))], 1, 2);
        let lines: Vec<String> = changes(Some(&second), &third)
            .iter()
            .map(Event::line)
            .collect();
        assert_eq!(lines, ["teammate bob died: why", "tasks: 1/2 done"]);
        assert!(changes(Some(&third), &third).is_empty());
    }

    #[test]
    fn events_as_json_have_a_type_and_a_time() {
        let v = Event::Tasks { done: 1, total: 3 }.json("2026-01-01T00:00:00.000Z");
        assert_eq!(
            v,
            json!({"type": "tasks", "done": 1, "total": 3, "time": "2026-01-01T00:00:00.000Z"})
        );
    }
}
