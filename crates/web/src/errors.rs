//! Errors in one shape, for every route: an HTTP status and
//! `{"error": {"status": 409, "code": "conflict", "message": "…"}}`, the message one
//! lowercase line saying what to do. A store error keeps its own message and is mapped
//! by its exit code (not found → 404, conflict → 409, usage → 400, lock timeout → 503).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use swarm_util::error::{Error, exit};

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

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let (status, code) = match e.exit_code() {
            exit::USAGE => (StatusCode::BAD_REQUEST, "bad_request"),
            exit::NOT_FOUND => (StatusCode::NOT_FOUND, "not_found"),
            exit::CONFLICT => (StatusCode::CONFLICT, "conflict"),
            exit::LOCK_TIMEOUT => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

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
    fn store_errors_keep_their_message_and_map_by_exit_code() {
        let e: ApiError = Error::conflict("request x was already approved by human").into();
        assert_eq!(
            (e.status, e.code, e.message.as_str()),
            (
                StatusCode::CONFLICT,
                "conflict",
                "request x was already approved by human"
            )
        );
        let e: ApiError = Error::not_found("no team 'x'").into();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        let e: ApiError = Error::usage("bad").into();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }
}
