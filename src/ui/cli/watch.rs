//! `swarm watch [<team>]`: the live dashboard in this terminal, or with `--once` one
//! frame of it as plain text on stdout.

use std::io::IsTerminal;

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::logging::log_filter;
use crate::ui::dashboard::{self, App, Jumper, Source};
use swarm::error::{Error, Result};
use swarm_store::Store;
use swarm_util::error::Base as _;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The team [default: --team, else the only team]
    pub team: Option<String>,
    /// Print one frame as plain text (no colour) and exit; needs no terminal
    #[arg(long)]
    pub once: bool,
    /// The frame's width in columns, with --once
    #[arg(long, default_value_t = 120, requires = "once", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub width: u16,
    /// The frame's height in rows, with --once
    #[arg(long, default_value_t = 40, requires = "once", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub height: u16,
}

pub fn run(ctx: &Ctx, args: WatchArgs) -> Result<()> {
    let store = ctx.team_or(args.team.as_deref())?;
    let tmux = ctx.team_tmux(&store)?;
    let source = Source::new(store.clone(), Some(tmux));
    if args.once {
        let app = App::new(source)?;
        print!("{}", app.render_text(args.width, args.height));
        return Ok(());
    }
    if !std::io::stdout().is_terminal() {
        return Err(Error::usage(
            "`swarm watch` needs a terminal; use `swarm watch --once` to print one frame",
        ));
    }
    let app = App::new(source)?.with_jumper(Jumper::for_caller(&ctx.caller));
    // Warnings would scribble over the screen: while it is up they go to the team's logs.
    let _logging = log_to_file(&store);
    dashboard::run(app)
}

/// This process's own log while the dashboard holds the screen: a local file beside the
/// team's, not shared state, so it is opened here rather than through the store.
fn log_to_file(store: &Store) -> tracing::subscriber::DefaultGuard {
    let (root, team) = (store.root(), store.team());
    let dir = root.logs_dir(team);
    let file = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.watch_log_path(team))
    });
    match file {
        Ok(f) => {
            let filter = log_filter("warn");
            tracing::subscriber::set_default(
                tracing_subscriber::fmt()
                    .with_env_filter(filter)
                    .with_target(false)
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .finish(),
            )
        }
        Err(_) => tracing::subscriber::set_default(tracing::subscriber::NoSubscriber::default()),
    }
}
