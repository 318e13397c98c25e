//! `GET /metrics`: the served teams in Prometheus' text format (OpenMetrics), for a fleet's
//! tools to scrape, behind the same gate as every other read (a scraper sends
//! `Authorization: Bearer TOKEN`). Encoded by `prometheus-client`, the Prometheus project's
//! own crate, never printed by hand.
//!
//! Each scrape reads each team's latest view (the hub's, taken on demand when nobody
//! watches) and its members' mailboxes; nothing is counted in this process, so a restart
//! of `swarm serve` loses nothing. Counters (`_total`) are the agents' own running totals
//! as their states record them.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `swarm_agents` | team, state, host | members by state and host |
//! | `swarm_tasks` | team, status | tasks by status |
//! | `swarm_approvals_pending` | team | requests waiting for a decision |
//! | `swarm_messages_unread` | team, agent | messages in the inbox, not yet acknowledged |
//! | `swarm_messages_acknowledged_total` | team, agent | messages moved to the delivered log |
//! | `swarm_tokens_total` | team, agent, model, kind | model tokens (`input`, `output`, `cache_read`, `cache_write`) |
//! | `swarm_cost_usd_total` | team, agent, model | what the tokens cost |
//! | `swarm_model_calls_total` | team, agent, model | model calls answered |

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::app::App;
use crate::errors::{ApiError, blocking};
use crate::view::TeamView;
use swarm_util::names::AgentName;

type Labels = Vec<(&'static str, String)>;

/// The families one scrape fills.
#[derive(Default)]
struct Families {
    agents: Family<Labels, Gauge>,
    tasks: Family<Labels, Gauge>,
    approvals: Family<Labels, Gauge>,
    unread: Family<Labels, Gauge>,
    acknowledged: Family<Labels, Counter>,
    tokens: Family<Labels, Counter>,
    cost: Family<Labels, Counter<f64, AtomicU64>>,
    calls: Family<Labels, Counter>,
}

impl Families {
    fn registry(&self) -> Registry {
        let mut r = Registry::with_prefix("swarm");
        r.register("agents", "Members by state and host", self.agents.clone());
        r.register("tasks", "Tasks by status", self.tasks.clone());
        r.register(
            "approvals_pending",
            "Requests waiting for a decision",
            self.approvals.clone(),
        );
        r.register(
            "messages_unread",
            "Messages in the inbox, not yet acknowledged",
            self.unread.clone(),
        );
        r.register(
            "messages_acknowledged",
            "Messages moved to the delivered log",
            self.acknowledged.clone(),
        );
        r.register("tokens", "Model tokens", self.tokens.clone());
        r.register("cost_usd", "What the model tokens cost", self.cost.clone());
        r.register("model_calls", "Model calls answered", self.calls.clone());
        r
    }

    /// What `view` of a team says, and its members' mailboxes in `store`.
    fn add(&self, view: &TeamView, store: &swarm_store::Store) {
        let team = view.team.clone();
        for m in &view.members {
            let st = &m.status;
            let host = st.host.clone().unwrap_or_else(|| "here".to_owned());
            self.agents
                .get_or_create(&vec![
                    ("team", team.clone()),
                    ("state", st.state.clone()),
                    ("host", host),
                ])
                .inc();
            let model = st.model.clone().unwrap_or_default();
            let who = |more: &[(&'static str, String)]| {
                let mut l = vec![
                    ("team", team.clone()),
                    ("agent", st.name.clone()),
                    ("model", model.clone()),
                ];
                l.extend_from_slice(more);
                l
            };
            let u = &st.usage;
            for (kind, n) in [
                ("input", u.input_tokens),
                ("output", u.output_tokens),
                ("cache_read", u.cache_read_input_tokens),
                ("cache_write", u.cache_creation_input_tokens),
            ] {
                self.tokens
                    .get_or_create(&who(&[("kind", kind.to_owned())]))
                    .inc_by(n);
            }
            self.cost.get_or_create(&who(&[])).inc_by(st.cost_usd);
            self.calls.get_or_create(&who(&[])).inc_by(st.model_calls);
            self.mail(&team, &st.name, store);
        }
        for (status, n) in [("pending", 0), ("in_progress", 1), ("completed", 2)] {
            let count = view
                .tasks
                .iter()
                .filter(|t| task_column(&t.task.status) == n)
                .count();
            self.tasks
                .get_or_create(&vec![("team", team.clone()), ("status", status.to_owned())])
                .set(count as i64);
        }
        self.approvals
            .get_or_create(&vec![("team", team)])
            .set(view.approvals.len() as i64);
    }

    fn mail(&self, team: &str, agent: &str, store: &swarm_store::Store) {
        let Ok(name) = AgentName::parse_any(agent) else {
            return;
        };
        let labels = vec![("team", team.to_owned()), ("agent", agent.to_owned())];
        if let Ok(unread) = store.mail().read_unread(&name) {
            self.unread.get_or_create(&labels).set(unread.len() as i64);
        }
        if let Ok(delivered) = store.mail().read_delivered(&name) {
            self.acknowledged
                .get_or_create(&labels)
                .inc_by(delivered.len() as u64);
        }
    }
}

fn task_column(status: &swarm_store::tasks::Status) -> u8 {
    use swarm_store::tasks::Status;
    match status {
        Status::Pending => 0,
        Status::InProgress => 1,
        Status::Completed => 2,
    }
}

/// The served teams' metrics, as of now.
pub async fn metrics(State(app): State<Arc<App>>) -> Result<Response, ApiError> {
    let text = blocking(move || {
        let families = Families::default();
        for config in app.hubs.teams()? {
            let Ok(hub) = app.hubs.get(&config.name) else {
                continue;
            };
            let view = hub.latest()?;
            families.add(&view, hub.store());
        }
        let mut text = String::new();
        encode(&mut text, &families.registry())
            .map_err(|e| ApiError::internal(format!("failed to encode the metrics: {e}")))?;
        Ok(text)
    })
    .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}
