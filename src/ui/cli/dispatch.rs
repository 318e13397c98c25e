//! Parses arguments, runs one command, and turns its result into an exit code.

use std::ffi::OsStr;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::ui::cli::authorize::authorize;
use crate::ui::cli::command::{Cli, Command};
use crate::ui::cli::context::Ctx;
use crate::ui::cli::identity::Actor;
use crate::ui::cli::logging::{init_logging, log_settings};
use crate::ui::cli::{
    agent, agents, approvals, claude_argv, completions, config, host, lead, merge, message,
    model_server, resume, run, serve, shutdown, spawn, status, store, task, team, watch,
};
use swarm::error::Result;
use swarm::exit::exit_code;
use swarm_store::layout::Root;
use swarm_util::environment::Environment;
use swarm_util::error::exit;
use swarm_util::names::{AgentName, LEAD, TeamName};

/// The whole program: `main.rs` calls this and nothing else.
pub fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(ours) = our_value_error(&e) {
                // A flag value our own parser refused: its one line says what to do.
                eprintln!("swarm: error: {ours}");
                return ExitCode::from(exit::USAGE);
            }
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The one read of the environment: everything below gets what it needs from here.
    let env = Environment::capture();
    let file = log_file(&cli, &env);
    let logs_to_file = file.is_some();
    init_logging(file);
    if logs_to_file {
        log_settings(&env);
    }
    swarm_util::fault::install(&env);
    let code = match run(cli, env) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A pane's process logs it too: its pane may be gone before anyone reads it.
            if logs_to_file {
                tracing::error!("{e}");
            }
            eprintln!("swarm: error: {e}");
            ExitCode::from(exit_code(&e))
        }
    };
    // Whatever noticed a death (`swarm status` too) ran its stop hooks; let them finish.
    swarm_team::life::supervisor::wait_for_stop_hooks();
    code
}

/// The message of a flag value refused by one of swarm's own parsers (a permission mode,
/// an allow rule, a provider...), which already names the value and what to use instead.
fn our_value_error(e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    let source = std::error::Error::source(e)?;
    let ours = source.is::<swarm::error::Error>()
        || source.is::<swarm_util::error::Error>()
        || source.is::<swarm_llm::LlmError>();
    ours.then(|| source.to_string())
}

/// Parses the command line, noting for `swarm teammate` which settings were given rather
/// than defaulted (an agent definition fills in only what was not given).
fn parse() -> std::result::Result<Cli, clap::Error> {
    // An empty variable counts as unset, as it does for every setting.
    let set = |name: &OsStr| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    // Claude Code's teammate command line is `swarm teammate`'s in other words.
    let argv = claude_argv::rewrite(std::env::args_os().collect());
    let matches = match with_env(Cli::command(), &set).try_get_matches_from(&argv) {
        Ok(matches) => matches,
        Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => {
            // clap's usage line in this error lists every flag the environment filled as if
            // it were required: the same error without the environment lists only what is.
            let plain = with_env(Cli::command(), &|_| false)
                .try_get_matches_from(&argv)
                .err();
            return Err(plain.filter(|p| p.kind() == e.kind()).unwrap_or(e));
        }
        Err(e) => return Err(e),
    };
    let mut cli = Cli::from_arg_matches(&matches)?;
    // A lead's mode (`swarm spawn` gets it as --lead-permission-mode) or an agent's own.
    if let Some((_, sub)) = matches.subcommand() {
        cli.global.permission_mode_given = ["permission_mode", "lead_permission_mode"]
            .iter()
            .filter(|id| sub.ids().any(|i| i.as_str() == **id))
            .any(|id| {
                matches!(
                    sub.value_source(id),
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                )
            });
    }
    if let (Command::Teammate(args), Some(("teammate", sub))) =
        (&mut cli.command, matches.subcommand())
    {
        let given = |id: &str| {
            matches!(
                sub.value_source(id),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        };
        args.mode_given = given("permission_mode");
        args.max_turns_given = given("max_turns");
    }
    Ok(cli)
}

/// `cmd` with only the arguments filled from an environment variable for which `keep` says
/// so still filled from it.
fn with_env(cmd: clap::Command, keep: &dyn Fn(&OsStr) -> bool) -> clap::Command {
    cmd.mut_args(|arg| match arg.get_env().map(OsStr::to_owned) {
        Some(name) if !keep(&name) => arg.env(None),
        _ => arg,
    })
    .mut_subcommands(|sub| with_env(sub, keep))
}

fn run(cli: Cli, env: Environment) -> Result<u8> {
    // Commands that never touch the store come before resolving its root.
    let command = match cli.command {
        Command::ModelServer(args) => return model_server::run(args).map(|()| 0),
        Command::Reap(args) => return crate::ui::cli::reap::run(args),
        Command::Completions(args) => {
            return completions::completions(Cli::command(), args).map(|()| 0);
        }
        Command::Man => return completions::manual(Cli::command()).map(|()| 0),
        other => other,
    };
    let mut ctx = Ctx::new(cli.global, env)?;
    authorize(&ctx.actor, &command)?;
    if speaks_for_lead(&ctx.actor, &command) {
        ctx.teams = ctx.teams.clone().signing_as_lead();
    }
    let done = |r: Result<()>| r.map(|()| 0);
    match command {
        Command::Team(cmd) => done(team::run(&ctx, cmd)),
        Command::Config => done(config::run(&ctx)),
        Command::Send(args) => done(message::send(&ctx, args)),
        Command::Broadcast(args) => done(message::broadcast(&ctx, args)),
        Command::Inbox(args) => done(message::inbox(&ctx, args)),
        Command::Task(cmd) => task::run(&ctx, cmd),
        Command::Spawn(args) => spawn::run(&ctx, args),
        Command::Status => done(status::status(&ctx)),
        Command::Shutdown(args) => done(shutdown::run(&ctx, args)),
        Command::Merge(args) => merge::run(&ctx, args),
        Command::Attach(args) => done(status::attach(&ctx, args)),
        Command::Lead(args) => lead::run(&ctx, args),
        Command::Approvals(args) => done(approvals::list(&ctx, args)),
        Command::Approve(args) => done(approvals::approve(&ctx, args)),
        Command::Reject(args) => done(approvals::reject(&ctx, args)),
        Command::Run(args) => run::run(&ctx, args),
        Command::Resume(args) => resume::run(&ctx, args),
        Command::Demo(args) => run::demo(&ctx, args),
        Command::Agent(args) => agent::solo(&ctx, args),
        Command::Teammate(args) => agent::teammate(&ctx, args),
        Command::Agents(cmd) => done(agents::run(&ctx, cmd)),
        Command::Watch(args) => done(watch::run(&ctx, args)),
        Command::Serve(args) => done(serve::run(&ctx, args)),
        Command::Store(cmd) => done(store::run(&ctx, cmd)),
        Command::Host(cmd) => done(host::run(&ctx, cmd)),
        Command::ModelServer(_) | Command::Reap(_) | Command::Completions(_) | Command::Man => {
            unreachable!("dispatched above")
        }
    }
}

/// A teammate's pane is for people: its log goes to `teams/<team>/logs/<agent>.log`.
/// Whether this command signs what it delivers in the lead's name with the team's lead key
/// (`swarm_store::lead_key`): the lead's own process and a person's commands do (their
/// decisions, their `send`, the spawns that hand teammates the public key); an agent's own
/// loop and whatever a teammate runs from its shell never do.
fn speaks_for_lead(actor: &Actor, command: &Command) -> bool {
    let for_lead = match actor {
        Actor::Person => true,
        Actor::Agent { name, .. } => name.as_str() == LEAD,
    };
    for_lead && !matches!(command, Command::Teammate(_) | Command::Agent(_))
}

fn log_file(cli: &Cli, env: &Environment) -> Option<std::fs::File> {
    let (team, agent) = match &cli.command {
        Command::Teammate(args) => (args.team_name.clone(), args.agent_name.clone()),
        Command::Lead(_) => (cli.global.team.clone()?, LEAD.to_owned()),
        _ => return None,
    };
    let root = Root::resolve(cli.global.root.as_deref(), env).ok()?;
    let team = TeamName::new(&team).ok()?;
    let agent = AgentName::parse_any(&agent).ok()?;
    swarm_store::documents::open_log(&root, &team, &agent).ok()
}
