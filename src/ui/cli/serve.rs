//! `swarm serve`: the teams under the root (or `--team`'s) in a browser, through
//! `swarm_web`. Prints the page's address with its access token once, on stdout, then
//! serves until SIGINT, SIGTERM or SIGHUP. Beyond loopback without `--token-file` it says
//! so on stderr, since whoever reads the printed token gets in.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::ui::cli::context::Ctx;
use swarm::error::Result;
use swarm_web::serve::{self, ServeFlags, ServePlace};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: an address and port (port 0 picks a free one); beyond loopback, give --token-file and TLS
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8484")]
    pub listen: SocketAddr,
    /// Read the access token from this file (yours alone, mode 600; 32+ characters, 12+ different ones) instead of making one and printing it
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
    let flags = ServeFlags {
        listen: args.listen,
        token_file: args.token_file,
        tls: args.tls_cert.zip(args.tls_key),
        notify: args.notify,
        client_timeout: args.client_timeout.into(),
    };
    let place = ServePlace {
        tmux_socket: ctx.global.tmux_socket.clone(),
        env: ctx.env().clone(),
        dirs: ctx.profile.settings.dirs.clone(),
    };
    Ok(serve::run(flags, ctx.teams.clone(), team, place)?)
}
