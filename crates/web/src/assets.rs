//! The page's files, embedded in the binary: no build step, nothing read from disk, and
//! no way to name any other file (a name is looked up in a fixed table).

use axum::extract::Path;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

use crate::errors::ApiError;

const PAGE: &str = include_str!("../assets/index.html");

/// The assets by name, with their content types.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_str!("../assets/icon.svg"),
    ),
];

pub async fn page() -> Html<&'static str> {
    Html(PAGE)
}

pub async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let (_, kind, body) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::not_found(format!("no asset '{name}'")))?;
    Ok(([(header::CONTENT_TYPE, *kind)], *body).into_response())
}
