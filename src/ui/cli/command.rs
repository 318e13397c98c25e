//! The command line's table of contents: [`Cli`] (the global options and one command) and
//! [`Command`], one variant per subcommand. Each command's arguments are defined in the
//! file that runs it; this file only points down at them.
// The doc comments here are clap's help text, where `<team>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};

use crate::ui::cli::agent::{AgentArgs, TeammateArgs};
use crate::ui::cli::agents::AgentsCommand;
use crate::ui::cli::approvals::{ApprovalsArgs, ApproveArgs, RejectArgs};
use crate::ui::cli::completions::CompletionsArgs;
use crate::ui::cli::context::GlobalOpts;
use crate::ui::cli::host::HostCommand;
use crate::ui::cli::lead::LeadArgs;
use crate::ui::cli::merge::MergeArgs;
use crate::ui::cli::message::{BroadcastArgs, InboxArgs, SendArgs};
use crate::ui::cli::model_server::{self, ModelServerArgs};
use crate::ui::cli::resume::ResumeArgs;
use crate::ui::cli::run::{DemoArgs, RunArgs};
use crate::ui::cli::serve::ServeArgs;
use crate::ui::cli::shutdown::ShutdownArgs;
use crate::ui::cli::spawn::SpawnArgs;
use crate::ui::cli::status::AttachArgs;
use crate::ui::cli::store::StoreCommand;
use crate::ui::cli::task::TaskCommand;
use crate::ui::cli::team::TeamCommand;
use crate::ui::cli::watch::WatchArgs;

/// Run teams of AI coding agents side by side in tmux.
///
/// A team lives on disk in Claude Code's own layout: a roster (teams/<team>/config.json),
/// one mailbox per agent (teams/<team>/inboxes/<agent>.json) and a shared task list
/// (tasks/<team>/<id>.json) under the root directory.
#[derive(Debug, Parser)]
#[command(name = "swarm", version, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Give a goal to a lead agent and watch its team work in tmux (--team names the new team;
    /// default: made from the goal)
    Run(RunArgs),

    /// Bring back a team whose lead crashed, whose tmux server died or whose machine
    /// rebooted: its lead and unfinished teammates, with their conversations [default: the
    /// unfinished team of this project]
    Resume(ResumeArgs),

    /// Run a real team on a small job with a built-in scripted model: no API key, no network
    Demo(DemoArgs),

    /// Watch a team live: members, tasks, messages and approvals in one dashboard
    Watch(WatchArgs),

    /// Show every team (or --team's) in a browser: members, tasks, messages, approvals,
    /// merges, spend and panes, live; approve, send and shut down from the page
    ///
    /// Prints the page's address with a fresh access token (http://127.0.0.1:PORT/?token=…)
    /// once on stdout and serves until SIGINT, SIGTERM or SIGHUP. See docs/web.md for the
    /// JSON API and the notifications.
    Serve(ServeArgs),

    /// Show every member: process, pane, state, task, activity, tokens, cost
    Status,

    /// Start a teammate in its own tmux pane
    Spawn(SpawnArgs),

    /// Ask teammates to stop; insist if they do not (SIGTERM, SIGKILL), and close their panes
    Shutdown(ShutdownArgs),

    /// Land teammates' worktree branches on one target, one at a time, through the check
    Merge(MergeArgs),

    /// Show the team's window (attach, or switch to it inside tmux)
    Attach(AttachArgs),

    /// List plan approval and permission requests
    Approvals(ApprovalsArgs),

    /// Approve a pending request
    Approve(ApproveArgs),

    /// Reject a pending request
    Reject(RejectArgs),

    /// Create, inspect and delete teams
    #[command(subcommand)]
    Team(TeamCommand),

    /// Show the settings swarm runs with here, from Claude Code's settings files, the
    /// environment and defaults, and where each value came from
    Config,

    /// Look after a PostgreSQL store: bring its schema up to this swarm's
    #[command(subcommand)]
    Store(StoreCommand),

    /// The hosts teammates may run on, reached over ssh: add, list, remove, check
    #[command(subcommand)]
    Host(HostCommand),

    /// Send a message to one member
    Send(SendArgs),

    /// Send a message to every member but the sender
    Broadcast(BroadcastArgs),

    /// Read an agent's inbox
    Inbox(InboxArgs),

    /// Work with the shared task list
    #[command(subcommand)]
    Task(TaskCommand),

    /// Agent definitions: the types `--agent-type` can name
    #[command(subcommand)]
    Agents(AgentsCommand),

    /// Run one agent in the foreground on a prompt
    Agent(AgentArgs),

    /// Run the team's lead process (started in the team window's first pane)
    Lead(LeadArgs),

    /// Run a teammate in this terminal (what `swarm spawn` starts in each pane)
    Teammate(TeammateArgs),

    /// Answer model API requests from a script, on loopback, for tests and demos
    ///
    /// Prints its URL (http://127.0.0.1:PORT) as the first line of stdout and serves
    /// POST /v1/messages until SIGINT, SIGTERM or SIGHUP. Point teammates at it with the
    /// scripted provider and --base-url URL.
    #[command(after_long_help = model_server::SCRIPT_FORMAT)]
    ModelServer(ModelServerArgs),

    /// End a teammate's process that outlived its session (run on its host by the
    /// shutdown ladder, over ssh)
    #[command(hide = true)]
    Reap(crate::ui::cli::reap::ReapArgs),

    /// Print a shell completion script, e.g. `swarm completions bash > ~/.local/share/bash-completion/completions/swarm`
    Completions(CompletionsArgs),

    /// Print swarm's manual page (roff), e.g. `swarm man | man -l -`
    Man,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every argument of every command, positional or flag, says what it is for in
    /// `--help` (but help and version, which clap describes).
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if help.trim().is_empty() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "swarm", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
