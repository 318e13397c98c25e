//! The routes: the page and its assets, the JSON reads, the event stream and the actions,
//! all behind [`auth::guard`], every response with headers that keep it to this origin
//! (a strict content security policy, no framing, no referrer, no caching).
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the page (to anyone: it holds nothing of the teams) |
//! | `GET /assets/{name}` | its script, style sheet and icon (to anyone) |
//! | `GET /api/session` | this session's label, the teams served |
//! | `GET /api/teams` | the teams served |
//! | `GET /api/teams/{team}` | the team's whole view |
//! | `GET /api/teams/{team}/{part}` | `members`, `tasks`, `feed`, `approvals`, `merge-queue` |
//! | `GET /api/teams/{team}/events` | the event stream ([`events`]) |
//! | `POST /api/teams/{team}/approvals/{id}` | decide a request ([`actions`]) |
//! | `POST /api/teams/{team}/messages` | send a message or a broadcast |
//! | `POST /api/teams/{team}/members/{name}/shutdown` | shut a teammate down |
//! | `POST /api/teams/{team}/merge-queue/retry` | retry a held branch |
//! | `GET /metrics` | the served teams in Prometheus' text format ([`metrics`]) |

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::middleware;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::auth::{self, Caller};
use crate::errors::{ApiError, blocking};

use crate::app::App;
use crate::{actions, assets, events, metrics};

pub fn router(app: Arc<App>) -> Router {
    let api = Router::new()
        .route("/api/session", get(session))
        .route("/api/teams", get(teams))
        .route("/metrics", get(metrics::metrics))
        .route("/api/teams/{team}", get(team))
        .route("/api/teams/{team}/events", get(stream))
        .route("/api/teams/{team}/{part}", get(part))
        .route("/api/teams/{team}/approvals/{id}", post(actions::decide))
        .route("/api/teams/{team}/messages", post(actions::send))
        .route(
            "/api/teams/{team}/members/{name}/shutdown",
            post(actions::shut_down),
        )
        .route(
            "/api/teams/{team}/merge-queue/retry",
            post(actions::retry_merge),
        );
    Router::new()
        .route("/", get(assets::page))
        .route("/assets/{name}", get(assets::asset))
        .merge(api)
        .fallback(|| async { ApiError::not_found("no such page or API route; see docs/web.md") })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app.auth),
            auth::guard,
        ))
        .layer(middleware::map_response(secure_headers))
        .with_state(app)
}

/// Keeps every response to this origin and out of caches.
async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn session(
    State(app): State<Arc<App>>,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    let label = match &caller {
        Caller::Session(s) => Some(s.label.clone()),
        Caller::Token => None,
    };
    let teams = team_list(&app).await?;
    Ok(Json(json!({"session": label, "teams": teams})))
}

async fn teams(State(app): State<Arc<App>>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"teams": team_list(&app).await?})))
}

async fn team_list(app: &Arc<App>) -> Result<Value, ApiError> {
    let app = Arc::clone(app);
    blocking(move || {
        let teams = app.hubs.teams()?;
        Ok(teams
            .into_iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "members": t.members.len(),
                    "createdAt": t.created_at,
                })
            })
            .collect())
    })
    .await
}

async fn team(State(app): State<Arc<App>>, Path(team): Path<String>) -> Result<Response, ApiError> {
    let view = blocking(move || {
        let hub = app.hubs.get(&team)?;
        Ok(hub.refresh()?)
    })
    .await?;
    Ok(Json(&*view).into_response())
}

async fn part(
    State(app): State<Arc<App>>,
    Path((team, part)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let name = match part.as_str() {
        "members" | "tasks" | "feed" | "approvals" => part.clone(),
        "merge-queue" => "mergeQueue".to_owned(),
        _ => {
            return Err(ApiError::not_found(format!(
                "no part '{part}' of a team; use members, tasks, feed, approvals, merge-queue or events"
            )));
        }
    };
    let view = blocking(move || {
        let hub = app.hubs.get(&team)?;
        Ok(hub.refresh()?)
    })
    .await?;
    let value = view
        .parts()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or(Value::Null);
    Ok(Json(json!({ name: value })).into_response())
}

async fn stream(
    State(app): State<Arc<App>>,
    Path(team): Path<String>,
) -> Result<Response, ApiError> {
    let hub = blocking(move || app.hubs.get(&team)).await?;
    Ok(events::stream(&hub).into_response())
}
