//! `swarm serve`'s start: its options resolved from its command line ([`ServeFlags`],
//! which the front end only parses) and the process's settings, then the server run
//! until a signal. The access token is shown here, once: the address to open, as Jupyter
//! prints it, on stdout.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

use crate::auth::Secret;
use crate::error::{Error, Result};
use crate::hub::TmuxFor;
use crate::server::{Options, Server};
use swarm_config::project::UserDirs;
use swarm_store::{Store, Teams};
use swarm_team::life::shutdown::LadderOptions;
use swarm_team::spawn::window;
use swarm_util::environment::Environment;
use swarm_util::names::TeamName;
use swarm_util::watcher::RESCAN_EVERY;

/// The waits before each retry of a webhook post.
const NOTIFY_BACKOFF: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(15),
    Duration::from_secs(60),
];

/// `swarm serve`'s command line, as parsed.
#[derive(Debug, Clone)]
pub struct ServeFlags {
    pub listen: SocketAddr,
    pub token_file: Option<PathBuf>,
    /// A certificate chain and its key (PEM).
    pub tls: Option<(PathBuf, PathBuf)>,
    pub notify: Vec<String>,
    pub client_timeout: Duration,
}

/// Where the server finds the teams' panes and hosts: the tmux server by name
/// (`--tmux-socket`), the environment tmux is found with, the user's directories.
#[derive(Debug, Clone)]
pub struct ServePlace {
    pub tmux_socket: Option<String>,
    pub env: Environment,
    pub dirs: UserDirs,
}

/// Serves `teams` (only `team`, when one is named) until SIGINT, SIGTERM or SIGHUP.
pub fn run(
    flags: ServeFlags,
    teams: Teams,
    team: Option<TeamName>,
    place: ServePlace,
) -> Result<()> {
    let token = match &flags.token_file {
        Some(path) => Secret::from_file(path)?,
        None => Secret::generate(),
    };
    let printed = flags
        .token_file
        .is_none()
        .then(|| token.expose().to_owned());
    warn_if_exposed(&flags);
    let tmux_for: TmuxFor = {
        let (socket, env) = (place.tmux_socket, place.env);
        Arc::new(move |store: &Store| window::server_for(store, socket.as_deref(), &env).ok())
    };
    let opts = Options {
        teams,
        team,
        listen: flags.listen,
        token,
        tls: flags.tls,
        notify: flags.notify,
        notify_backoff: NOTIFY_BACKOFF.to_vec(),
        client_timeout: flags.client_timeout,
        rescan: RESCAN_EVERY,
        tmux_for,
        ladder: LadderOptions::new(place.dirs),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Serve(format!("failed to start the async runtime: {e}")))?;
    let served = runtime.block_on(serve(opts, printed));
    // A shutdown ladder or a merge run the page started may still be going: each of its
    // steps is whole, so it is left where it is rather than waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Says on stderr what listening beyond loopback exposes.
fn warn_if_exposed(flags: &ServeFlags) {
    if flags.listen.ip().is_loopback() {
        return;
    }
    if flags.token_file.is_none() {
        eprintln!(
            "swarm serve: warning: listening on {} (reachable from other machines) with a token made now, printed below: whoever reads it gets in; give --token-file FILE instead",
            flags.listen
        );
    }
    if flags.tls.is_none() {
        eprintln!(
            "swarm serve: warning: without --tls-cert and --tls-key, the token and the team's messages cross the network unencrypted"
        );
    }
}

async fn serve(opts: Options, printed: Option<String>) -> Result<()> {
    let listen = |kind: SignalKind| {
        signal(kind).map_err(|e| Error::Serve(format!("failed to install a signal handler: {e}")))
    };
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt())?,
        listen(SignalKind::terminate())?,
        listen(SignalKind::hangup())?,
    );
    let server = Server::start(opts).await?;
    // The one place the token is shown: the address to open, as Jupyter prints it.
    let line = match &printed {
        Some(token) => format!("{}?token={token}", server.url()),
        None => server.url(),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::Serve(format!("failed to print the address: {e}")))?;
    drop(out);
    tracing::info!("serving at {}", server.url());
    server
        .run_until(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
        })
        .await;
    Ok(())
}
