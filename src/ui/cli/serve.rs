//! `swarm serve`: the teams under the root (or `--team`'s) in a browser, through
//! `swarm_web`. Prints the page's address with its access token once, on stdout, then
//! serves until SIGINT, SIGTERM or SIGHUP. Beyond loopback without `--token-file` it says
//! so on stderr, since whoever reads the printed token gets in.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::signal::unix::{SignalKind, signal};

use crate::ui::cli::context::Ctx;
use swarm_store::Store;
use swarm_team::shutdown::LadderOptions;
use swarm_team::window;
use swarm_util::error::{Error, Result};
use swarm_util::watcher::RESCAN_EVERY;
use swarm_web::{Options, Secret, Server};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: an address and port (port 0 picks a free one); beyond loopback, give --token-file and TLS
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8484")]
    pub listen: SocketAddr,
    /// Read the access token from this file (at least 16 characters) instead of making one and printing it
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM; with --tls-key)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM; with --tls-cert)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Post a small JSON event to this webhook (ntfy, a Slack incoming webhook...) when a request waits, a teammate dies, the budget passes 80 %, a merge is held or the run ends; repeatable
    #[arg(long, value_name = "URL")]
    pub notify: Vec<String>,
    /// How long a client may take to send a request before it is refused (408)
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub client_timeout: humantime::Duration,
}

/// The waits before each retry of a webhook post.
const NOTIFY_BACKOFF: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(15),
    Duration::from_secs(60),
];

pub fn run(ctx: &Ctx, args: ServeArgs) -> Result<()> {
    let team = match ctx.global.team.as_deref() {
        Some(t) => {
            let store = ctx.team_or(Some(t))?;
            // A team that does not exist is refused now, not served empty.
            store.roster().load()?;
            Some(store.team().clone())
        }
        None => None,
    };
    let token = match &args.token_file {
        Some(path) => Secret::from_file(path)?,
        None => Secret::generate(),
    };
    let printed = args.token_file.is_none().then(|| token.expose().to_owned());
    if !args.listen.ip().is_loopback() {
        if args.token_file.is_none() {
            eprintln!(
                "swarm serve: warning: listening on {} (reachable from other machines) with a token made now, printed below: whoever reads it gets in; give --token-file FILE instead",
                args.listen
            );
        }
        if args.tls_cert.is_none() {
            eprintln!(
                "swarm serve: warning: without --tls-cert and --tls-key, the token and the team's messages cross the network unencrypted"
            );
        }
    }
    let tmux_for: swarm_web::hub::TmuxFor = {
        let (socket, env) = (ctx.global.tmux_socket.clone(), ctx.env().clone());
        Arc::new(move |store: &Store| window::server_for(store, socket.as_deref(), &env).ok())
    };
    let opts = Options {
        teams: ctx.teams.clone(),
        team,
        listen: args.listen,
        token,
        tls: args.tls_cert.zip(args.tls_key),
        notify: args.notify,
        notify_backoff: NOTIFY_BACKOFF.to_vec(),
        client_timeout: args.client_timeout.into(),
        rescan: RESCAN_EVERY,
        tmux_for,
        ladder: LadderOptions::new(ctx.settings.dirs.clone()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    let served = runtime.block_on(serve(opts, printed));
    // A shutdown ladder or a merge run the page started may still be going: each of its
    // steps is whole, so it is left where it is rather than waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

async fn serve(opts: Options, printed: Option<String>) -> Result<()> {
    let listen = |kind: SignalKind| {
        signal(kind).map_err(|e| Error::Other(format!("failed to install a signal handler: {e}")))
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
        .map_err(|e| Error::Other(format!("failed to print the address: {e}")))?;
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
