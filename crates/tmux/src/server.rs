//! Which tmux server swarm talks to: [`Server`]; how it is picked ([`choose`], behind
//! [`Tmux::resolve`]): `-L NAME` from a flag or `$SWARM_TMUX_SOCKET`, else the server the
//! caller is inside, else the default; and what `$TMUX` and `$TMUX_PANE` say about a
//! caller inside tmux ([`Caller`], [`socket_of`]). `$TMUX` is read only to choose a server.
//!
//! [`Tmux::resolve`]: crate::Tmux::resolve

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::ids::PaneId;
use swarm_util::environment::Environment;
use swarm_util::error::Error;
use swarm_util::vars;

/// Which tmux server a [`Tmux`](crate::Tmux) talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// `-L NAME`: a socket named NAME in tmux's socket directory.
    Name(String),
    /// `-S PATH`: the server at this socket path (the one a user inside tmux is in).
    Path(PathBuf),
    /// No flag: the user's default server.
    Default,
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Server::Name(n) => write!(f, "socket {n:?} (-L)"),
            Server::Path(p) => write!(f, "{} (-S)", p.display()),
            Server::Default => write!(f, "the default socket"),
        }
    }
}

/// The server [`Tmux::resolve`](crate::Tmux::resolve) picks, with the environment passed
/// in, so it can be tested
/// without mutating the process environment.
pub fn choose(flag: Option<&str>, env: impl Fn(&str) -> Option<OsString>) -> Result<Server, Error> {
    let named = match flag {
        Some(f) => Some(f.to_owned()),
        None => env(vars::SWARM_TMUX_SOCKET)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned()),
    };
    if let Some(name) = named {
        if name.is_empty() || name.contains('/') || name.contains('\0') {
            return Err(Error::usage(format!(
                "invalid tmux socket name {name:?}: use a plain name (it lives in tmux's socket directory), without '/'"
            )));
        }
        return Ok(Server::Name(name));
    }
    if let Some(tmux) = env(vars::TMUX).filter(|v| !v.is_empty())
        && let Some(path) = socket_of(&tmux)
    {
        return Ok(Server::Path(path));
    }
    Ok(Server::Default)
}

/// The socket path in a `$TMUX` value, `PATH,SERVER_PID,SESSION`.
pub fn socket_of(tmux_env: &OsStr) -> Option<PathBuf> {
    let bytes = tmux_env.as_bytes();
    // The path is everything before the last two fields, so a comma in it survives.
    let mut fields = bytes.rsplitn(3, |&b| b == b',');
    let (_, _, path) = (fields.next(), fields.next(), fields.next());
    let path = path.unwrap_or(bytes);
    (!path.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(path)))
}

/// Where the calling process sits in tmux, as `$TMUX` and `$TMUX_PANE` say: read once by
/// the front end and passed down, so nothing here reads the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The socket of the server the caller runs inside.
    pub socket: Option<PathBuf>,
    /// The caller's own pane.
    pub pane: Option<PaneId>,
}

impl Caller {
    pub fn from_env(env: &Environment) -> Caller {
        Caller {
            socket: env.get(vars::TMUX).and_then(|v| socket_of(OsStr::new(v))),
            pane: env.get(vars::TMUX_PANE).and_then(|p| p.parse().ok()),
        }
    }

    /// Whether the caller runs inside tmux.
    pub fn inside(&self) -> bool {
        self.socket.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tmux;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.into())
        }
    }

    #[test]
    fn resolve_prefers_flag_then_env_then_caller_then_default() {
        let all = env_of(&[
            (vars::SWARM_TMUX_SOCKET, "from-env"),
            ("TMUX", "/tmp/tmux-1000/default,123,0"),
        ]);
        let s = choose(Some("flag"), &all).unwrap();
        assert_eq!(s, Server::Name("flag".into()));
        let s = choose(None, &all).unwrap();
        assert_eq!(s, Server::Name("from-env".into()));
        let inside = env_of(&[
            (vars::SWARM_TMUX_SOCKET, ""),
            ("TMUX", "/tmp/tmux-1000/default,123,0"),
        ]);
        let s = choose(None, &inside).unwrap();
        assert_eq!(s, Server::Path("/tmp/tmux-1000/default".into()));
        assert_eq!(
            Tmux::with_server(s).global_args(),
            ["-S", "/tmp/tmux-1000/default"]
        );
        let s = choose(None, env_of(&[("TMUX", "")])).unwrap();
        assert_eq!(s, Server::Default);
        assert!(Tmux::with_server(s).global_args().is_empty());
        assert!(choose(Some("a/b"), env_of(&[])).is_err());
    }

    #[test]
    fn socket_path_keeps_commas() {
        assert_eq!(
            socket_of(OsStr::new("/tmp/a,b/sock,42,3")),
            Some(PathBuf::from("/tmp/a,b/sock"))
        );
        assert_eq!(
            socket_of(OsStr::new("/tmp/sock")),
            Some(PathBuf::from("/tmp/sock"))
        );
        assert_eq!(socket_of(OsStr::new(",1,2")), None);
    }
}
