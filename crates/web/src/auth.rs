//! Who may in, and what they may do: the access token, the sessions it opens, and the
//! checks every request passes before it reaches a route.
//!
//! - The token is made at start (or read from `--token-file`). `GET /?token=…` with the
//!   right one opens a session and redirects to `/#session=KEY`: the page moves the key
//!   into its tab's `sessionStorage` and drops it from the address bar, then sends it in
//!   `X-Swarm-Session` on every request. A script sends `Authorization: Bearer TOKEN`
//!   instead. A token anywhere else (another path, a query on a POST, a form field) is
//!   never accepted.
//! - Why a key in a header and not a cookie: a browser sends a cookie set by
//!   `127.0.0.1:8484` to every port of `127.0.0.1` (RFC 6265 §8.5), so any other local
//!   listener the browser visits, another user's included, would receive a working
//!   session; binding a cookie to a `Host` does not help, since whoever holds the cookie
//!   can send any `Host`. `sessionStorage` belongs to one origin (scheme, host and port)
//!   and one tab, and nothing sends it by itself: no other port, site or local listener
//!   ever sees the key, and no cross-site request can carry it, so it needs no CSRF token.
//! - The page itself and its assets are served to anyone (they hold nothing of the
//!   teams); every other request needs the session key or the bearer token: 401
//!   otherwise.
//! - A session expires after [`IDLE_LIMIT`] without a request or [`MAX_AGE`] after it was
//!   opened, whichever comes first: 401, and the page says to open the printed address
//!   again. At most [`MAX_SESSIONS`] are kept; the oldest goes first.
//! - An action (any method but GET and HEAD) needs an `Origin` (or, lacking one, a
//!   `Referer`) of this very origin (scheme and `Host`) from a session, and no foreign one
//!   from a bearer caller: 403 otherwise.
//!
//! The token is compared in constant time (a session's key is looked up in a hash map
//! with random keys); no secret is logged, and a session is known outside this module by
//! its label (`web-1a2b3c4d`), which names it in approval records.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use crate::error::{Error, Result};
use crate::errors::ApiError;
use swarm_util::error::Base as _;

/// The header a page sends its session's key in.
pub const SESSION_HEADER: &str = "x-swarm-session";
/// Sessions kept at once; the oldest goes first (its browser logs in again).
pub const MAX_SESSIONS: usize = 256;
/// A session unused this long is over.
pub const IDLE_LIMIT: Duration = Duration::from_secs(12 * 3600);
/// A session this old is over, used or not.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The shortest token `--token-file` may hold.
const MIN_TOKEN_LEN: usize = 32;
/// The fewest different characters it may be made of (`openssl rand -hex 32` has 16).
const MIN_TOKEN_CHARS: usize = 12;

/// A secret string: the access token or a session's key. Its `Debug` hides
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

    /// The token in `path` (surrounding whitespace ignored): a file only its owner may
    /// read, holding at least 32 printable characters without spaces, of at least 12
    /// different ones.
    pub fn from_file(path: &Path) -> Result<Secret> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::io("read the token file", path, e))?;
        check_private(path)?;
        let token = text.trim();
        let distinct = token
            .chars()
            .collect::<std::collections::HashSet<_>>()
            .len();
        if token.len() < MIN_TOKEN_LEN
            || distinct < MIN_TOKEN_CHARS
            || !token.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(Error::usage(format!(
                "the token in {} is weak: it must be at least {MIN_TOKEN_LEN} printable characters without spaces, of at least {MIN_TOKEN_CHARS} different ones; write a random one there, e.g. `openssl rand -hex 32 > {}`",
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

/// Refuses a token file that its group or others may read or write.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path).map_err(|e| Error::io("read the token file", path, e))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::usage(format!(
            "the token file {} is readable by others (mode {mode:03o}); make it yours alone with `chmod 600 {}`",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<()> {
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One browser tab's session.
#[derive(Debug)]
pub struct Session {
    /// What records and logs name it by.
    pub label: String,
    opened: Instant,
    last_used: Mutex<Instant>,
}

impl Session {
    /// Whether it is over at `now` (see [`IDLE_LIMIT`] and [`MAX_AGE`]).
    fn expired(&self, now: Instant) -> bool {
        let last = *self.last_used.lock().unwrap_or_else(|p| p.into_inner());
        now.saturating_duration_since(last) > IDLE_LIMIT
            || now.saturating_duration_since(self.opened) > MAX_AGE
    }

    fn touch(&self, now: Instant) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = now;
    }
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No key or token, or a wrong one.
    Unknown,
    /// A session that was, and is over.
    Expired,
}

impl Refused {
    pub fn error(self) -> ApiError {
        match self {
            Refused::Unknown => ApiError::unauthorized(),
            Refused::Expired => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this session expired (12 h unused, or 7 days old): open the address `swarm serve` printed again",
            ),
        }
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

/// The live sessions by key, and their keys oldest first. Its `Debug` shows no key.
#[derive(Default)]
struct Sessions {
    by_key: HashMap<String, Arc<Session>>,
    order: VecDeque<String>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sessions({} open)", self.by_key.len())
    }
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

    /// A new session if `given` is the token, opened at `now`: its key and the session.
    pub fn login(&self, given: &str, now: Instant) -> Option<(Secret, Arc<Session>)> {
        if !self.token.matches(given) {
            return None;
        }
        let key = Secret::generate();
        let label = format!("web-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let session = Arc::new(Session {
            label,
            opened: now,
            last_used: Mutex::new(now),
        });
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let Sessions { by_key, order } = &mut *sessions;
        by_key.retain(|_, s| !s.expired(now));
        order.retain(|k| by_key.contains_key(k));
        while sessions.order.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.order.pop_front()
        {
            sessions.by_key.remove(&oldest);
        }
        sessions.order.push_back(key.0.clone());
        sessions.by_key.insert(key.0.clone(), Arc::clone(&session));
        Some((key, session))
    }

    /// The caller a request's headers show at `now`: a live session's key, or the bearer
    /// token. An expired session is forgotten.
    pub fn caller(&self, headers: &HeaderMap, now: Instant) -> Result<Caller, Refused> {
        let header = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        if let Some(bearer) = header(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer "))
        {
            return match self.token.matches(bearer.trim()) {
                true => Ok(Caller::Token),
                false => Err(Refused::Unknown),
            };
        }
        let key =
            header(axum::http::HeaderName::from_static(SESSION_HEADER)).ok_or(Refused::Unknown)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let session = sessions.by_key.get(key).cloned().ok_or(Refused::Unknown)?;
        if session.expired(now) {
            sessions.by_key.remove(key);
            sessions.order.retain(|k| k != key);
            return Err(Refused::Expired);
        }
        session.touch(now);
        Ok(Caller::Session(session))
    }

    /// Refuses an action that does not come from this origin.
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
        Ok(())
    }
}

/// The `token` parameter of a query, if any.
fn query_token(uri: &Uri) -> Option<&str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The gate in front of every route (see the module comment).
pub async fn guard(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let page = path == "/";
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    if let Some(given) = query_token(req.uri()) {
        if !read || !page {
            // Only the address `swarm serve` printed trades a token for a session.
            return ApiError::unauthorized().into_response();
        }
        return login(&auth, given);
    }
    let public = read && (page || path.starts_with("/assets/"));
    let caller = match auth.caller(req.headers(), Instant::now()) {
        Ok(caller) => caller,
        Err(_) if public => return next.run(req).await,
        Err(refused) => return refused.error().into_response(),
    };
    if !read && let Err(e) = auth.check_action(&caller, req.headers()) {
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

/// Trades the token for a session: to the page, with the session's key in the fragment
/// (which no browser sends anywhere); or a line saying how to get in.
fn login(auth: &Auth, given: &str) -> Response {
    match auth.login(given, Instant::now()) {
        Some((key, session)) => {
            tracing::info!("web session {} opened", session.label);
            let to = format!("/#session={}", key.expose());
            (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
        }
        None => refused_page(),
    }
}

/// What a browser with a wrong token sees: a line saying how to get in, and nothing else.
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

    fn session_key(key: &Secret) -> HeaderMap {
        headers(&[(SESSION_HEADER, key.expose())])
    }

    #[test]
    fn the_token_opens_a_session_whose_key_is_sent_in_a_header() {
        let auth = Auth::new(Secret("t".repeat(40)), false);
        let now = Instant::now();
        assert!(auth.login("wrong", now).is_none());
        assert!(auth.login(&"t".repeat(39), now).is_none());
        let (key, session) = auth.login(&"t".repeat(40), now).unwrap();
        let caller = auth.caller(&session_key(&key), now);
        assert!(
            matches!(caller, Ok(Caller::Session(s)) if s.label == session.label),
            "the key names the session"
        );
        // Not from a cookie: a browser sends those to every port of the host.
        let cookie = format!("swarm_session={}; {SESSION_HEADER}={}", key.0, key.0);
        assert_eq!(
            auth.caller(&headers(&[("cookie", &cookie)]), now).err(),
            Some(Refused::Unknown)
        );
        assert_eq!(
            auth.caller(&headers(&[(SESSION_HEADER, "forged")]), now)
                .err(),
            Some(Refused::Unknown)
        );
        let bearer = format!("Bearer {}", "t".repeat(40));
        assert!(matches!(
            auth.caller(&headers(&[("authorization", &bearer)]), now),
            Ok(Caller::Token)
        ));
        assert_eq!(
            auth.caller(&headers(&[("authorization", "Bearer nope")]), now)
                .err(),
            Some(Refused::Unknown)
        );
        assert!(format!("{:?}", auth).contains("Secret(…)"));
        assert!(!format!("{:?}", auth).contains("tttt"));
        assert!(!format!("{:?}", auth).contains(&key.0));
    }

    #[test]
    fn a_session_expires_when_unused_for_12_hours_or_7_days_old() {
        let auth = Auth::new(Secret::generate(), false);
        let start = Instant::now();
        let hour = Duration::from_secs(3600);
        let (idle, _) = auth.login(auth.token.expose(), start).unwrap();
        let (busy, _) = auth.login(auth.token.expose(), start).unwrap();
        // Used every 11 hours, it lives on; left alone for 12 hours and more, it is over.
        let mut t = start;
        for _ in 0..14 {
            t += 11 * hour;
            if t > start + MAX_AGE {
                break;
            }
            assert!(
                auth.caller(&session_key(&busy), t).is_ok(),
                "at {:?}",
                t - start
            );
        }
        assert_eq!(
            auth.caller(
                &session_key(&idle),
                start + 12 * hour + Duration::from_secs(1)
            )
            .err(),
            Some(Refused::Expired)
        );
        // Forgotten once found over.
        assert_eq!(
            auth.caller(&session_key(&idle), start + hour).err(),
            Some(Refused::Unknown)
        );
        // Past 7 days, even a session in use is over.
        let late = start + MAX_AGE + Duration::from_secs(1);
        auth.sessions.lock().unwrap().by_key[&busy.0].touch(late);
        assert_eq!(
            auth.caller(&session_key(&busy), late).err(),
            Some(Refused::Expired)
        );
        assert!(
            Refused::Expired
                .error()
                .message
                .contains("open the address")
        );
    }

    #[test]
    fn the_oldest_session_goes_past_the_limit() {
        let auth = Auth::new(Secret::generate(), false);
        let now = Instant::now();
        let (first, _) = auth.login(auth.token.expose(), now).unwrap();
        for _ in 0..MAX_SESSIONS {
            auth.login(auth.token.expose(), now).unwrap();
        }
        assert_eq!(
            auth.caller(&session_key(&first), now).err(),
            Some(Refused::Unknown)
        );
        assert_eq!(auth.sessions.lock().unwrap().by_key.len(), MAX_SESSIONS);
    }

    #[test]
    fn an_action_needs_this_origin() {
        let auth = Auth::new(Secret::generate(), false);
        let (_, session) = auth.login(auth.token.expose(), Instant::now()).unwrap();
        let caller = Caller::Session(Arc::clone(&session));
        let host = ("host", "127.0.0.1:8000");
        let ok = headers(&[host, ("origin", "http://127.0.0.1:8000")]);
        assert_eq!(auth.check_action(&caller, &ok), Ok(()));
        let forged = headers(&[host, ("origin", "http://evil.example")]);
        assert_eq!(
            auth.check_action(&caller, &forged).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let other_port = headers(&[host, ("origin", "http://127.0.0.1:9000")]);
        assert!(auth.check_action(&caller, &other_port).is_err());
        let no_origin = headers(&[host]);
        assert_eq!(
            auth.check_action(&caller, &no_origin).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let referer = headers(&[host, ("referer", "http://127.0.0.1:8000/")]);
        assert_eq!(auth.check_action(&caller, &referer), Ok(()));
        let lookalike = headers(&[host, ("referer", "http://127.0.0.1:8000.evil.example/")]);
        assert!(auth.check_action(&caller, &lookalike).is_err());
        // A script with the token may send no Origin, but not a foreign one either.
        assert_eq!(auth.check_action(&Caller::Token, &headers(&[host])), Ok(()));
        assert!(
            auth.check_action(&Caller::Token, &headers(&[host, ("origin", "null")]))
                .is_err()
        );
    }

    #[test]
    fn a_token_file_must_hold_a_strong_token_only_its_owner_reads() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let write = |text: &str, mode: u32| {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let strong = "0123456789abcdef0123456789abcdef01";
        for weak in [
            "short",
            &"a".repeat(40),
            &"abcdefghij".repeat(4),
            "0123456789abcdef0123456789abcde",
        ] {
            write(weak, 0o600);
            let err = Secret::from_file(&path).unwrap_err();
            assert!(
                err.to_string().contains("is weak: it must be at least 32"),
                "{weak}: {err}"
            );
            assert!(
                weak.len() < 6 || !err.to_string().contains(weak),
                "the token shown: {err}"
            );
        }
        write(&format!("  {strong}\n"), 0o600);
        assert_eq!(Secret::from_file(&path).unwrap().expose(), strong);
        for mode in [0o644, 0o640, 0o604, 0o620] {
            write(strong, mode);
            let err = Secret::from_file(&path).unwrap_err();
            assert!(
                err.to_string().contains("readable by others"),
                "{mode:o}: {err}"
            );
            assert!(err.to_string().contains("chmod 600"), "{err}");
        }
        let err = Secret::from_file(&dir.path().join("missing")).unwrap_err();
        assert!(
            err.to_string().contains("failed to read the token file"),
            "{err}"
        );
    }
}
