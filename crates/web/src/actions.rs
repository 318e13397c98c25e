//! What a person does from the page, through the same calls as the CLI:
//!
//! - decide a request: `store.approvals().resolve` as `swarm approve`/`reject` (by
//!   `human`, with the web session in `resolvedVia`); the store decides it exactly once,
//!   so when two pages click together one gets 409 naming who decided first;
//! - send a message or a broadcast (`to: "*"`): `store.mail().send` as `swarm send`, from
//!   the lead, as a person at the CLI sends;
//! - shut a teammate down: the team crate's shutdown ladder, as `swarm shutdown NAME`, in
//!   the background (202); one ladder per teammate at a time;
//! - retry a held merge: `merge::retry`, then a run of the queue in the background, as
//!   `swarm merge --retry BRANCH`.
//!
//! A body is JSON (`Content-Type: application/json`, else 415), at most [`MAX_BODY`]
//! bytes (413), and must arrive within the client time limit (408). What a background
//! action came to is told to the team's pages as a notice, and logged.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::app::App;
use crate::auth::Caller;
use crate::errors::{ApiError, blocking};
use crate::hub::Hub;
use swarm_config::permissions::PermissionMode;
use swarm_git::merge;
use swarm_store::approvals::Decision;
use swarm_store::mailbox::Envelope;
use swarm_team::life::shutdown::{self, Outcome};
use swarm_util::names::{AgentName, LEAD};

/// The largest request body an action takes: a message is far smaller than the 256 KiB a
/// mailbox takes, and anything bigger is refused before it is read.
pub const MAX_BODY: usize = 64 * 1024;

/// The request's JSON body, within the limits the module comment gives.
async fn body<T: DeserializeOwned>(app: &App, req: Request) -> Result<T, ApiError> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim() == "application/json")
        });
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "an action's body is JSON: send Content-Type: application/json",
        ));
    }
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!(
                "the body is over {MAX_BODY} bytes; send a shorter one (a long text: write it to a file and send its path)"
            ),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let read = axum::body::to_bytes(req.into_body(), MAX_BODY);
    let bytes = match tokio::time::timeout(app.client_timeout, read).await {
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!("the body did not arrive within {:?}", app.client_timeout),
            ));
        }
        Ok(Err(_)) => return Err(too_large()),
        Ok(Ok(bytes)) => bytes,
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not the JSON this action takes: {e}"))
    })
}

fn hub(app: &Arc<App>, team: &str) -> Result<Arc<Hub>, ApiError> {
    app.hubs.get(team)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideBody {
    pub approve: bool,
    #[serde(default)]
    pub feedback: Option<String>,
    /// For a plan: the permission mode the teammate gets.
    #[serde(default)]
    pub mode: Option<String>,
}

/// `POST /api/teams/{team}/approvals/{id}`.
pub async fn decide(
    State(app): State<Arc<App>>,
    Path((team, id)): Path<(String, String)>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Result<Response, ApiError> {
    let b: DecideBody = body(&app, req).await?;
    let mode = b
        .mode
        .as_deref()
        .filter(|m| !m.is_empty())
        .map(|m| m.parse::<PermissionMode>().map(|m| m.to_string()))
        .transpose()?;
    let via = caller.via();
    let decided = blocking(move || {
        let hub = hub(&app, &team)?;
        let decision = Decision {
            approve: b.approve,
            feedback: b.feedback.filter(|f| !f.trim().is_empty()),
            mode,
            by: "human".to_owned(),
            via: Some(via.clone()),
        };
        let approvals = hub.store().approvals();
        let decided = match approvals.resolve(&id, decision.clone()) {
            // A Claude Code teammate's request nobody recorded yet: recorded by a view.
            Err(e) if e.is_not_found() => {
                hub.refresh()?;
                approvals.resolve(&id, decision)
            }
            other => other,
        }?;
        tracing::info!(
            "{via} {} {}'s request {}",
            decided.state.as_str(),
            decided.agent,
            decided.request_id
        );
        hub.poke();
        Ok(decided)
    })
    .await?;
    Ok(Json(json!({"approval": decided})).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendBody {
    /// A member's name, or `*` for everyone but the lead.
    pub to: String,
    pub text: String,
    #[serde(default)]
    pub summary: Option<String>,
}

/// `POST /api/teams/{team}/messages`.
pub async fn send(
    State(app): State<Arc<App>>,
    Path(team): Path<String>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Result<Response, ApiError> {
    let b: SendBody = body(&app, req).await?;
    let via = caller.via();
    let sent = blocking(move || {
        let hub = hub(&app, &team)?;
        let store = hub.store();
        let color = store
            .roster()
            .load()?
            .member(LEAD)
            .and_then(|m| m.color.clone());
        let envelope = Envelope::new(LEAD, b.text)
            .with_summary(b.summary.filter(|s| !s.trim().is_empty()))
            .with_color(color);
        let sent = store.mail().send(&b.to, envelope)?;
        tracing::info!("{via} sent a message to {}", b.to);
        hub.poke();
        Ok(sent)
    })
    .await?;
    Ok(Json(json!({"sent": sent})).into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownBody {
    /// Skip asking: terminate at once.
    #[serde(default)]
    pub force: bool,
}

/// `POST /api/teams/{team}/members/{name}/shutdown`: 202 once the ladder has started.
pub async fn shut_down(
    State(app): State<Arc<App>>,
    Path((team, name)): Path<(String, String)>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Result<Response, ApiError> {
    let b: ShutdownBody = if req.headers().contains_key(header::CONTENT_TYPE) {
        body(&app, req).await?
    } else {
        ShutdownBody::default()
    };
    let agent = AgentName::new(&name).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if agent.is_lead() {
        return Err(ApiError::bad_request(
            "the lead is not shut down from the page; stop it in its pane (Ctrl-C)",
        ));
    }
    let (hub, key) = {
        let app = Arc::clone(&app);
        let name = name.clone();
        blocking(move || {
            let hub = hub(&app, &team)?;
            hub.store().roster().load()?.require(&name)?;
            Ok((hub, format!("shutdown/{team}/{name}")))
        })
        .await?
    };
    if !app.actions.start(&key) {
        return Err(ApiError::conflict(format!(
            "{name} is already being shut down"
        )));
    }
    let mut opts = app.ladder.clone();
    opts.force = b.force;
    let via = caller.via();
    tracing::info!("{via} shuts {name} down");
    tokio::task::spawn_blocking(move || {
        let store = hub.store();
        let report = shutdown::shut_down(store, hub.tmux(), &name, &opts, &|step| {
            tracing::info!("{step}");
        });
        match report {
            Ok(r) => match r.outcome {
                Outcome::Rejected(why) => {
                    hub.notice(format!("{name} refused to shut down: {why}"), false)
                }
                outcome => hub.notice(
                    format!("{name} is shut down ({})", describe(&outcome)),
                    true,
                ),
            },
            Err(e) => hub.notice(format!("failed to shut {name} down: {e}"), false),
        }
        app.actions.finish(&key);
        hub.poke();
    });
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"started": true, "member": agent.as_str()})),
    )
        .into_response())
}

fn describe(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Approved => "it agreed",
        Outcome::Terminated => "on SIGTERM",
        Outcome::Killed => "on SIGKILL",
        Outcome::NotRunning => "it was not running",
        Outcome::Rejected(_) => "it refused",
        Outcome::DeclaredDead => "it did not answer and was declared dead",
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryBody {
    pub branch: String,
}

/// `POST /api/teams/{team}/merge-queue/retry`: the entry queued again (202), the queue
/// run in the background.
pub async fn retry_merge(
    State(app): State<Arc<App>>,
    Path(team): Path<String>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Result<Response, ApiError> {
    let b: RetryBody = body(&app, req).await?;
    let via = caller.via();
    let (hub, entry) = blocking(move || {
        let hub = hub(&app, &team)?;
        let entry = merge::retry(hub.store(), &b.branch)?;
        tracing::info!("{via} queued {} again", entry.branch);
        Ok((hub, entry))
    })
    .await?;
    let runner = Arc::clone(&hub);
    tokio::task::spawn_blocking(move || {
        let store = runner.store();
        match merge::run(store, &merge::Options::default(), &|_| {}) {
            Ok(outcome) if outcome.target.is_empty() => runner.notice(
                "nothing to merge: the team has no teammate worktrees".to_owned(),
                true,
            ),
            Ok(outcome) => match outcome.held() {
                0 => runner.notice(
                    format!(
                        "the merge queue ran: {} is at {}",
                        outcome.target,
                        short(&outcome.target_commit)
                    ),
                    true,
                ),
                n => runner.notice(
                    format!("the merge queue ran and holds {n} branch(es); see its entries"),
                    false,
                ),
            },
            Err(e) => runner.notice(format!("failed to run the merge queue: {e}"), false),
        }
        runner.poke();
    });
    hub.poke();
    Ok((StatusCode::ACCEPTED, Json(json!({"entry": entry}))).into_response())
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
