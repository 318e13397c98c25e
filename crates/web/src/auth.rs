//! Who may in, and what they may do: the access token, the sessions it opens, and the
//! checks every request passes before it reaches a route.
//!
//! - The token is made at start (or read from `--token-file`). `GET /?token=…` with the
//!   right one opens a session: a random cookie (`HttpOnly`, `SameSite=Strict`, `Secure`
//!   over TLS) and a redirect to `/`, so the token leaves the address bar. A script sends
//!   `Authorization: Bearer TOKEN` instead. A token anywhere else (another path, a
//!   query on a POST, a form field) is never accepted.
//! - Every other request needs the cookie or the bearer token: 401 otherwise.
//! - An action (any method but GET and HEAD) from a session needs the session's CSRF token
//!   in `X-CSRF-Token` and an `Origin` (or, lacking one, a `Referer`) of this very origin
//!   (scheme and `Host`): 403 otherwise. A bearer caller needs no CSRF token (a browser
//!   never adds that header by itself), but a foreign `Origin` is refused all the same.
//!
//! Secrets are compared in constant time, never logged, and a session is known outside
//! this module by its label (`web-1a2b3c4d`), which names it in approval records.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use crate::error::{Error, Result};
use crate::errors::ApiError;
use swarm_util::error::Base as _;

/// The cookie a session is kept in.
pub const COOKIE: &str = "swarm_session";
/// The header an action from a session carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Sessions kept at once; the oldest goes first (its browser logs in again).
const MAX_SESSIONS: usize = 256;
/// The shortest token `--token-file` may hold.
const MIN_TOKEN_LEN: usize = 16;

/// A secret string: the access token, a session's cookie or CSRF token. Its `Debug` hides
/// it, so it cannot slip into a log through a struct that holds it.
#[derive(Clone)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// 244 random bits from the operating system's generator, as 64 hex digits.
    pub fn generate() -> Secret {
        Secret(format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        ))
    }

    /// The token in `path` (surrounding whitespace ignored): at least 16 characters, no
    /// spaces or control characters.
    pub fn from_file(path: &Path) -> Result<Secret> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::io("read the token file", path, e))?;
        let token = text.trim();
        if token.len() < MIN_TOKEN_LEN || !token.chars().all(|c| c.is_ascii_graphic()) {
            return Err(Error::usage(format!(
                "the token in {} must be at least {MIN_TOKEN_LEN} printable characters without spaces; write one there, e.g. `openssl rand -hex 32 > {}`",
                path.display(),
                path.display()
            )));
        }
        Ok(Secret(token.to_owned()))
    }

    /// The secret itself: only for the one line that prints it at start, and URL-safe.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, given: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), given.as_bytes())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One browser's session.
#[derive(Debug)]
pub struct Session {
    /// What records and logs name it by.
    pub label: String,
    csrf: Secret,
}

impl Session {
    /// The token its actions carry; the page gets it from `GET /api/session`.
    pub fn csrf(&self) -> &str {
        self.csrf.expose()
    }
}

/// Who is asking, once let in.
#[derive(Debug, Clone)]
pub enum Caller {
    Session(Arc<Session>),
    /// A script with the bearer token.
    Token,
}

impl Caller {
    /// Where an action came from, for records (`resolvedVia`) and logs.
    pub fn via(&self) -> String {
        match self {
            Caller::Session(s) => format!("web session {}", s.label),
            Caller::Token => "web api (bearer token)".to_owned(),
        }
    }
}

/// The token and the sessions it opened.
#[derive(Debug)]
pub struct Auth {
    token: Secret,
    tls: bool,
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    by_cookie: HashMap<String, Arc<Session>>,
    order: VecDeque<String>,
}

impl Auth {
    pub fn new(token: Secret, tls: bool) -> Auth {
        Auth {
            token,
            tls,
            sessions: Mutex::new(Sessions::default()),
        }
    }

    fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// A new session if `given` is the token: the `Set-Cookie` value and the session.
    pub fn login(&self, given: &str) -> Option<(String, Arc<Session>)> {
        if !self.token.matches(given) {
            return None;
        }
        let cookie = Secret::generate();
        let label = format!("web-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let session = Arc::new(Session {
            label,
            csrf: Secret::generate(),
        });
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.order.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.order.pop_front()
        {
            sessions.by_cookie.remove(&oldest);
        }
        sessions.order.push_back(cookie.0.clone());
        sessions
            .by_cookie
            .insert(cookie.0.clone(), Arc::clone(&session));
        let secure = if self.tls { "; Secure" } else { "" };
        let set = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/{secure}",
            cookie.0
        );
        Some((set, session))
    }

    /// The caller a request's headers show: a session cookie, or the bearer token.
    pub fn caller(&self, headers: &HeaderMap) -> Option<Caller> {
        if let Some(bearer) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        {
            return self.token.matches(bearer.trim()).then_some(Caller::Token);
        }
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        cookies(headers, COOKIE)
            .find_map(|value| sessions.by_cookie.get(value).cloned())
            .map(Caller::Session)
    }

    /// Refuses an action that does not come from this origin, or from a session without
    /// its CSRF token.
    pub fn check_action(&self, caller: &Caller, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or_else(|| ApiError::bad_request("the request has no Host header"))?;
        let origin = format!("{}://{host}", self.scheme());
        let header_str = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        let same_origin = match (header_str(header::ORIGIN), header_str(header::REFERER)) {
            (Some(o), _) => Some(o == origin),
            (None, Some(r)) => Some(
                r.strip_prefix(&origin)
                    .is_some_and(|rest| rest.starts_with('/')),
            ),
            (None, None) => None,
        };
        match (caller, same_origin) {
            (_, Some(false)) => {
                return Err(ApiError::forbidden(
                    "cross-origin request refused: actions come only from this server's own page",
                ));
            }
            (Caller::Session(_), None) => {
                return Err(ApiError::forbidden(
                    "an action needs an Origin header: send it from this server's page, or use the bearer token",
                ));
            }
            _ => {}
        }
        if let Caller::Session(session) = caller {
            let given = header_str(axum::http::HeaderName::from_static(CSRF_HEADER));
            if !given.is_some_and(|g| session.csrf.matches(g)) {
                return Err(ApiError::forbidden(
                    "missing or wrong CSRF token: reload the page and try again",
                ));
            }
        }
        Ok(())
    }
}

/// The values of cookie `name` in a request's `Cookie` headers.
fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(move |pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v)
        })
}

/// The `token` parameter of a query, if any.
fn query_token(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The gate in front of every route (see the module comment).
pub async fn guard(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let page = req.uri().path() == "/";
    if let Some(given) = query_token(req.uri()) {
        if req.method() != Method::GET || !page {
            // Only the address `swarm serve` printed trades a token for a session.
            return ApiError::unauthorized().into_response();
        }
        return match auth.login(given) {
            Some((cookie, session)) => {
                tracing::info!("web session {} opened", session.label);
                (
                    StatusCode::SEE_OTHER,
                    [
                        (header::LOCATION, "/".to_owned()),
                        (header::SET_COOKIE, cookie),
                    ],
                )
                    .into_response()
            }
            None => refused_page(),
        };
    }
    let Some(caller) = auth.caller(req.headers()) else {
        return if page {
            refused_page()
        } else {
            ApiError::unauthorized().into_response()
        };
    };
    if !matches!(*req.method(), Method::GET | Method::HEAD)
        && let Err(e) = auth.check_action(&caller, req.headers())
    {
        tracing::warn!(
            "refused {} {}: {}",
            req.method(),
            req.uri().path(),
            e.message
        );
        return e.into_response();
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// What a browser without the token sees: a line saying how to get in, and nothing else.
fn refused_page() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Html(
            "<!doctype html><meta charset=utf-8><title>swarm</title>\
             <p>This page needs the access token: open the URL <code>swarm serve</code> printed.</p>",
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_token_opens_a_session_whose_cookie_is_the_key() {
        let auth = Auth::new(Secret("t".repeat(40)), false);
        assert!(auth.login("wrong").is_none());
        assert!(auth.login(&"t".repeat(39)).is_none());
        let (cookie, session) = auth.login(&"t".repeat(40)).unwrap();
        assert!(
            cookie.contains("HttpOnly; SameSite=Strict; Path=/"),
            "{cookie}"
        );
        assert!(!cookie.contains("Secure"));
        let value = cookie.split(';').next().unwrap();
        let caller = auth.caller(&headers(&[("cookie", &format!("a=b; {value}"))]));
        assert!(
            matches!(caller, Some(Caller::Session(s)) if s.label == session.label),
            "the cookie names the session"
        );
        assert!(
            auth.caller(&headers(&[("cookie", "swarm_session=forged")]))
                .is_none()
        );
        let bearer = format!("Bearer {}", "t".repeat(40));
        assert!(matches!(
            auth.caller(&headers(&[("authorization", &bearer)])),
            Some(Caller::Token)
        ));
        assert!(
            auth.caller(&headers(&[("authorization", "Bearer nope")]))
                .is_none()
        );
        assert!(format!("{:?}", auth).contains("Secret(…)"));
        assert!(!format!("{:?}", auth).contains("tttt"));
    }

    #[test]
    fn an_action_needs_this_origin_and_the_sessions_csrf_token() {
        let auth = Auth::new(Secret::generate(), false);
        let (_, session) = auth.login(auth.token.expose()).unwrap();
        let caller = Caller::Session(Arc::clone(&session));
        let host = ("host", "127.0.0.1:8000");
        let ok = headers(&[
            host,
            ("origin", "http://127.0.0.1:8000"),
            ("x-csrf-token", session.csrf()),
        ]);
        assert_eq!(auth.check_action(&caller, &ok), Ok(()));
        let forged = headers(&[
            host,
            ("origin", "http://evil.example"),
            ("x-csrf-token", session.csrf()),
        ]);
        assert_eq!(
            auth.check_action(&caller, &forged).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let no_csrf = headers(&[host, ("origin", "http://127.0.0.1:8000")]);
        assert_eq!(
            auth.check_action(&caller, &no_csrf).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let no_origin = headers(&[host, ("x-csrf-token", session.csrf())]);
        assert_eq!(
            auth.check_action(&caller, &no_origin).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let referer = headers(&[
            host,
            ("referer", "http://127.0.0.1:8000/"),
            ("x-csrf-token", session.csrf()),
        ]);
        assert_eq!(auth.check_action(&caller, &referer), Ok(()));
        let lookalike = headers(&[
            host,
            ("referer", "http://127.0.0.1:8000.evil.example/"),
            ("x-csrf-token", session.csrf()),
        ]);
        assert!(auth.check_action(&caller, &lookalike).is_err());
        // A script with the token needs no CSRF token, but not from a foreign page either.
        assert_eq!(auth.check_action(&Caller::Token, &headers(&[host])), Ok(()));
        assert!(
            auth.check_action(&Caller::Token, &headers(&[host, ("origin", "null")]))
                .is_err()
        );
    }

    #[test]
    fn a_token_file_must_hold_a_real_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "short\n").unwrap();
        let err = Secret::from_file(&path).unwrap_err();
        assert!(err.to_string().contains("at least 16"), "{err}");
        std::fs::write(&path, "  0123456789abcdef0123\n").unwrap();
        assert_eq!(
            Secret::from_file(&path).unwrap().expose(),
            "0123456789abcdef0123"
        );
        let err = Secret::from_file(&dir.path().join("missing")).unwrap_err();
        assert!(
            err.to_string().contains("failed to read the token file"),
            "{err}"
        );
    }
}
