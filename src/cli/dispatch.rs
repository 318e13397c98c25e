//! Parses arguments, runs one command, and turns its result into an exit code.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::args::{Cli, Command};
use crate::cli::context::Ctx;
use crate::cli::{message, model_server, task, team};
use crate::error::{Result, exit};

/// The whole program: `main.rs` calls this and nothing else.
pub fn main() -> ExitCode {
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("swarm: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    // Commands that never touch the store come before resolving its root.
    let command = match cli.command {
        Command::ModelServer(args) => return model_server::run(args),
        other => other,
    };
    let ctx = Ctx::new(cli.global)?;
    match command {
        Command::Team(cmd) => team::run(&ctx, cmd),
        Command::Send(args) => message::send(&ctx, args),
        Command::Broadcast(args) => message::broadcast(&ctx, args),
        Command::Inbox(args) => message::inbox(&ctx, args),
        Command::Task(cmd) => task::run(&ctx, cmd),
        Command::ModelServer(_) => unreachable!("dispatched above"),
    }
}

/// Warnings go to stderr; `SWARM_LOG` (an env-filter, e.g. `swarm=debug`) says more.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWARM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
