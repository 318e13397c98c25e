//! Errors in one shape, for every route: an HTTP status and
//! `{"error": {"status": 409, "code": "conflict", "message": "…"}}`, the message one
//! lowercase line saying what to do. An error of the layers below keeps its own message
//! and is mapped by its kind, in one place ([`status_of`]): not found → 404, conflict →
//! 409, usage → 400, a lock or the team's database not there in time → 503.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use swarm_util::error::Error as BaseError;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong access token: open the URL `swarm serve` printed, or send `Authorization: Bearer TOKEN`",
        )
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

/// The status and code of a failure of the layers below, by its kind.
pub fn status_of(e: &(dyn std::error::Error + 'static)) -> (StatusCode, &'static str) {
    use swarm_util::error::find;
    if let Some(store) = find::<swarm_store::error::Error>(e)
        && store.away().is_some()
    {
        return (StatusCode::SERVICE_UNAVAILABLE, "busy");
    }
    match find::<BaseError>(e) {
        Some(BaseError::Usage(_) | BaseError::InvalidName { .. }) => {
            (StatusCode::BAD_REQUEST, "bad_request")
        }
        Some(BaseError::NotFound(_)) => (StatusCode::NOT_FOUND, "not_found"),
        Some(BaseError::Conflict(_)) => (StatusCode::CONFLICT, "conflict"),
        Some(BaseError::LockTimeout { .. }) => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
        _ => match find::<swarm_store::error::Error>(e) {
            Some(swarm_store::error::Error::Fenced(_)) => (StatusCode::CONFLICT, "conflict"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        },
    }
}

/// Every error of the layers below becomes an `ApiError` by [`status_of`].
macro_rules! from_below {
    ($($t:ty),*) => {$(
        impl From<$t> for ApiError {
            fn from(e: $t) -> ApiError {
                let (status, code) = status_of(&e);
                ApiError::new(status, code, e.to_string())
            }
        }
    )*};
}

from_below!(
    BaseError,
    swarm_store::error::Error,
    swarm_team::error::Error,
    swarm_git::error::Error,
    crate::error::Error
);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "status": self.status.as_u16(),
            "code": self.code,
            "message": self.message,
        }});
        (self.status, Json(body)).into_response()
    }
}

/// Runs a store or team call on a blocking thread (they take locks and may wait).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("a store call failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_below_keep_their_message_and_map_by_kind() {
        let e: ApiError = BaseError::conflict("request x was already approved by human").into();
        assert_eq!(
            (e.status, e.code, e.message.as_str()),
            (
                StatusCode::CONFLICT,
                "conflict",
                "request x was already approved by human"
            )
        );
        let e: ApiError = BaseError::not_found("no team 'x'").into();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let e: ApiError = BaseError::usage("bad").into();
        let deep = swarm_team::error::Error::Store(BaseError::not_found("no task #9").into());
        assert_eq!(ApiError::from(deep).status, StatusCode::NOT_FOUND);
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }
}
