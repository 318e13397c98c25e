//! The command line: every subcommand and flag, as clap derive types.
// The doc comments here are clap's help text, where `<team>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use swarm_config::agents::Isolation;
use swarm_config::permissions::{AllowRule, Approver, PermissionMode};
use swarm_config::tools::ToolName;
use swarm_llm::Provider;
use swarm_llm::budget::Limits;
use swarm_store::roster;
use swarm_team::inherit::Engine;
use swarm_util::error::Error;

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

#[derive(Debug, Clone, Args)]
pub struct GlobalOpts {
    /// Directory holding teams/ and tasks/ [default: $SWARM_ROOT, else $CLAUDE_CONFIG_DIR, else ~/.claude]
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// The team to act on [default: the only team, if there is exactly one]
    #[arg(long, global = true, env = "SWARM_TEAM", value_name = "TEAM")]
    pub team: Option<String>,

    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,

    /// The tmux server to use, by socket name (tmux -L) [default: the team's, else the one you are in, else the default]
    #[arg(long, global = true, env = "SWARM_TMUX_SOCKET", value_name = "NAME")]
    pub tmux_socket: Option<String>,

    /// Whether the command's --permission-mode was given (flag or environment), set after
    /// parsing: only then does it win over the settings files' `permissions.defaultMode`.
    #[arg(skip)]
    pub permission_mode_given: bool,
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
    Watch(crate::ui::cli::watch::WatchArgs),

    /// Show every team (or --team's) in a browser: members, tasks, messages, approvals,
    /// merges, spend and panes, live; approve, send and shut down from the page
    ///
    /// Prints the page's address with a fresh access token (http://127.0.0.1:PORT/?token=…)
    /// once on stdout and serves until SIGINT, SIGTERM or SIGHUP. See docs/web.md for the
    /// JSON API and the notifications.
    Serve(crate::ui::cli::serve::ServeArgs),

    /// Show every member: process, pane, state, task, activity, tokens, cost
    Status,

    /// Start a teammate in its own tmux pane
    Spawn(SpawnArgs),

    /// Ask teammates to stop; insist if they do not (SIGTERM, SIGKILL), and close their panes
    Shutdown(ShutdownArgs),

    /// Land teammates' worktree branches on one target, one at a time, through the check
    Merge(MergeArgs),

    /// Show the team's window (attach, or switch to it inside tmux)
    Attach {
        /// The team [default: --team, else the only team]
        team: Option<String>,
    },

    /// List plan approval and permission requests
    Approvals {
        /// Only requests still waiting for a decision
        #[arg(long)]
        pending: bool,
    },

    /// Approve a pending request
    Approve {
        /// The request's id, as `swarm approvals` lists it
        request_id: String,
        /// For a plan: the permission mode the teammate gets [default: the lead agent's, else default]
        #[arg(long, value_name = "MODE")]
        mode: Option<PermissionMode>,
    },

    /// Reject a pending request
    Reject {
        /// The request's id, as `swarm approvals` lists it
        request_id: String,
        /// What to change (required for a plan)
        #[arg(long)]
        feedback: Option<String>,
    },

    /// Create, inspect and delete teams
    #[command(subcommand)]
    Team(TeamCommand),

    /// Show the settings swarm runs with here, from Claude Code's settings files, the
    /// environment and defaults, and where each value came from
    Config,

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
    #[command(after_long_help = crate::ui::cli::model_server::SCRIPT_FORMAT)]
    ModelServer(ModelServerArgs),

    /// Print a shell completion script, e.g. `swarm completions bash > ~/.local/share/bash-completion/completions/swarm`
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },

    /// Print swarm's manual page (roff), e.g. `swarm man | man -l -`
    Man,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the agent types in reach: built-in, project (.claude/agents) and user (~/.claude/agents)
    List {
        /// Look for project definitions from this directory [default: the current one]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ModelServerArgs {
    /// The script: JSON rules saying what to answer (its format: see `swarm model-server --help`)
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// Where to listen: a loopback address and port; port 0 picks a free one
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Append one JSON line per request (time, agent, the rule that answered, body size, latest user text) to this file
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Append one JSON line per request (time, agent, path, the whole request body) to this file
    #[arg(long, value_name = "FILE")]
    pub log_requests: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team with the lead as its first member
    Create {
        /// The new team's name: 1-64 characters of a-z, 0-9 and '-'
        team: String,
        /// What the team is for, recorded in its roster
        #[arg(long, short)]
        description: Option<String>,
    },
    /// List teams
    List,
    /// Show a team's members
    Show {
        /// The team [default: --team, else the only team]
        team: Option<String>,
    },
    /// Add a member to the roster (without starting it)
    Add {
        /// The member's name (unique within the team)
        agent: String,
        /// One of red, blue, green, yellow, purple, orange, pink, cyan [default: next in turn]
        #[arg(long, value_parser = colour)]
        color: Option<String>,
        /// The member's agent type, recorded in the roster
        #[arg(long, value_name = "TYPE")]
        agent_type: Option<String>,
        /// The member's model, recorded in the roster
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The member's working directory [default: the current one]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Remove a member from the roster, returning its open tasks to pending
    Remove {
        /// The member to remove
        agent: String,
    },
    /// Delete a team's roster, inboxes and task list, and its teammates' worktrees
    Delete {
        /// The team to delete
        team: String,
        /// Delete even if teammates are still running, or worktrees hold unmerged work
        #[arg(long)]
        force: bool,
    },
    /// Delete every finished team (its lead exited); never one still running, nor one
    /// whose worktrees hold unmerged work
    Prune,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A member's name, or '*' for everyone but the sender
    pub to: String,
    #[command(flatten)]
    pub body: MessageBody,
}

#[derive(Debug, Args)]
pub struct BroadcastArgs {
    #[command(flatten)]
    pub body: MessageBody,
}

/// A message and who sends it: what `send` and `broadcast` share.
#[derive(Debug, Args)]
pub struct MessageBody {
    /// The message; '-' reads it from stdin
    #[arg(required_unless_present = "file")]
    pub text: Option<String>,
    /// Read the message from a file
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Sender name [default: the agent whose environment this is (SWARM_AGENT_NAME), which
    /// may send only as itself; else team-lead]
    #[arg(long)]
    pub from: Option<String>,
    /// A 5-10 word preview shown in feeds
    #[arg(long)]
    pub summary: Option<String>,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox: a member's name, e.g. team-lead
    pub agent: String,
    /// Only messages not yet delivered
    #[arg(long)]
    pub unread: bool,
    /// Acknowledge the messages printed: they move to the delivered log
    #[arg(long)]
    pub ack: bool,
    /// Keep printing messages as they arrive, until interrupted
    #[arg(long, short)]
    pub follow: bool,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task
    Add {
        /// A short title in the imperative ("Write the parser")
        subject: String,
        /// What to do, in detail
        #[arg(long, short, default_value = "")]
        description: String,
        /// Present-continuous text shown while the task runs ("Writing tests")
        #[arg(long)]
        active_form: Option<String>,
        /// A task that must be completed first (repeatable)
        #[arg(long = "blocked-by", value_name = "ID")]
        blocked_by: Vec<String>,
        /// Files the task will touch, relative to the project (comma-separated or repeated);
        /// others editing them are warned
        #[arg(long, value_name = "PATHS")]
        files: Vec<String>,
    },
    /// List tasks
    List {
        /// Only tasks with this status: pending, in_progress or completed
        #[arg(long)]
        status: Option<String>,
        /// Only tasks this member owns
        #[arg(long, value_name = "AGENT")]
        owner: Option<String>,
        /// Include internal tasks
        #[arg(long)]
        all: bool,
    },
    /// Show one task
    Show {
        /// The task's id
        id: String,
    },
    /// Change fields of a task
    Update {
        /// The task's id
        id: String,
        /// New title
        #[arg(long)]
        subject: Option<String>,
        /// New description
        #[arg(long, short)]
        description: Option<String>,
        /// New present-continuous text shown while the task runs
        #[arg(long)]
        active_form: Option<String>,
        /// pending, in_progress or completed
        #[arg(long)]
        status: Option<String>,
        /// New owner; an empty string clears it
        #[arg(long)]
        owner: Option<String>,
        /// Add a blocker (repeatable)
        #[arg(long = "blocked-by", value_name = "ID")]
        blocked_by: Vec<String>,
        /// Add a task this one blocks (repeatable)
        #[arg(long = "blocks", value_name = "ID")]
        blocks: Vec<String>,
    },
    /// Claim a task for an agent (compare-and-set)
    Claim {
        /// The task's id
        id: String,
        /// The member who takes it
        #[arg(long = "as", value_name = "AGENT")]
        agent: String,
        /// Refuse if the agent already owns an open task
        #[arg(long)]
        busy_check: bool,
    },
    /// Claim the first ready task for an agent
    ///
    /// With no task ready it prints so and exits 10.
    Next {
        /// The member who takes it
        #[arg(long = "as", value_name = "AGENT")]
        agent: String,
    },
    /// Mark a task completed
    Done {
        /// The task's id
        id: String,
    },
    /// Return every open task of an agent to pending with no owner
    Release {
        /// The member whose tasks are returned
        #[arg(long = "as", alias = "owner", value_name = "AGENT")]
        agent: String,
    },
    /// Delete a task
    Delete {
        /// The task's id
        id: String,
    },
}

/// Which model to talk to.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model")]
pub struct ModelOpts {
    #[command(flatten)]
    pub api: ApiOpts,
    /// Model id [default: the provider's]
    #[arg(long, env = "SWARM_MODEL", value_name = "MODEL")]
    pub model: Option<String>,
    /// The model's context window in tokens; the conversation is compacted at 80 % of it (teammates inherit it) [default: the model's, from swarm's table]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
}

/// Which API to talk to: what a lead passes on to every teammate.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model")]
pub struct ApiOpts {
    /// anthropic, openai (any OpenAI-compatible server) or scripted (swarm's model server)
    #[arg(long, env = "SWARM_PROVIDER", value_name = "PROVIDER")]
    pub provider: Option<Provider>,
    /// API base URL [default: $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the provider's]
    #[arg(long, env = "SWARM_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// The anthropic-version header of the anthropic and scripted providers [default: 2023-06-01]
    #[arg(long, env = "ANTHROPIC_VERSION", value_name = "VERSION")]
    pub anthropic_version: Option<String>,
    /// How long one model call may wait out rate limits (429, 529) in all before it fails;
    /// a team waits together [default: 900]
    #[arg(long, env = "SWARM_RATE_LIMIT_WAIT", value_name = "SECS")]
    pub rate_limit_wait: Option<u64>,
}

/// What runs the teammates.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineOpts {
    /// What runs the teammates: swarm (its own agent loop) or claude (a Claude Code process in the pane)
    #[arg(long, default_value = "swarm", value_name = "ENGINE")]
    pub engine: Engine,
    /// The Claude Code client for --engine claude [default: $SWARM_CLAUDE_BIN, else claude on PATH]
    #[arg(long, value_name = "PATH")]
    pub claude_bin: Option<PathBuf>,
}

/// What an agent may do without asking.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Permissions")]
pub struct PermissionOpts {
    /// default, acceptEdits, bypassPermissions or plan
    #[arg(
        long,
        env = "SWARM_PERMISSION_MODE",
        default_value = "default",
        value_name = "MODE"
    )]
    pub permission_mode: PermissionMode,
    /// Allow a tool without asking, e.g. 'Bash(cargo test:*)' or 'Write(src/**)' (repeatable)
    #[arg(long = "allow", value_name = "RULE", value_parser = allow_rule)]
    pub allow: Vec<AllowRule>,
    /// Stop after this many model turns per piece of work
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_turns: u32,
    /// How long to wait for an answer to a permission request
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub permission_timeout: humantime::Duration,
}

/// What may be spent on model calls. At the limit no new model call starts.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Budget")]
pub struct BudgetOpts {
    /// Stop starting model calls once this many US dollars are spent (by the price table; models without a known price are not counted)
    #[arg(long, value_name = "USD", value_parser = dollars)]
    pub budget_usd: Option<f64>,
    /// Stop starting model calls once this many tokens are spent (input + output + cache creation + cache read)
    #[arg(long, value_name = "N", value_parser = token_count)]
    pub budget_tokens: Option<u64>,
}

impl BudgetOpts {
    pub fn limits(&self) -> Limits {
        Limits {
            usd: self.budget_usd,
            tokens: self.budget_tokens,
        }
    }
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The task
    #[arg(long, short = 'p', value_name = "PROMPT")]
    pub prompt: String,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
}

#[derive(Debug, Args)]
pub struct TeammateArgs {
    /// Restore its conversation and continue its work (started by a resumed lead)
    #[arg(long, hide = true)]
    pub resume: bool,
    /// <name>@<team>
    #[arg(long)]
    pub agent_id: String,
    /// Its name in the team's roster
    #[arg(long)]
    pub agent_name: String,
    /// Its team
    #[arg(long)]
    pub team_name: String,
    /// The colour its pane and messages are shown in
    #[arg(long)]
    pub agent_color: Option<String>,
    /// The lead's session id (for correlation only)
    #[arg(long)]
    pub parent_session_id: Option<String>,
    /// Start in plan mode; leave it only when team-lead approves a plan
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Load this agent definition: its instructions, tools, permission mode and turn limit apply
    #[arg(long)]
    pub agent_type: Option<String>,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    /// This teammate's own budget
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// Whether --permission-mode was given (flag or environment), set after parsing.
    #[arg(skip)]
    pub mode_given: bool,
    /// Whether --max-turns was given, set after parsing.
    #[arg(skip)]
    pub max_turns_given: bool,
}

#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// The teammate's name (unique within the team); several names spawn several
    /// teammates together, each with the options given
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// First instructions, delivered to its inbox before it starts [default: the agent definition's initialPrompt]
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the first instructions from a file
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// An agent definition (.claude/agents/*.md, ~/.claude/agents/*.md, or general-purpose, Explore, Plan); see `swarm agents list`
    #[arg(long, value_name = "TYPE")]
    pub agent_type: Option<String>,
    /// The teammate's model, unless $SWARM_SUBAGENT_MODEL (or $CLAUDE_CODE_SUBAGENT_MODEL) is set, which wins [default: the agent definition's, else the lead's ($SWARM_MODEL), else the provider's]
    #[arg(long)]
    pub model: Option<String>,
    /// The teammate's permission mode [default: the lead's ($SWARM_PERMISSION_MODE)]
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<PermissionMode>,
    /// Start in plan mode; only team-lead's approval of a plan lets it make changes
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Working directory [default: the current one]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// red, blue, green, yellow, purple, orange, pink or cyan [default: the agent definition's, else next in turn]
    #[arg(long, value_parser = colour)]
    pub color: Option<String>,
    /// worktree: work in a new git worktree on branch swarm/<team>/<name>, made from HEAD; none: in --cwd [default: the agent definition's, else none]
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<Isolation>,
    /// Print the tmux commands the spawn would run (secrets only by name); create nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub engine: EngineOpts,
    /// The API teammates use
    #[command(flatten)]
    pub api: ApiOpts,
    /// The lead's model, which a teammate gets when nothing else chooses one (only its
    /// environment twin is meant to be used)
    #[arg(long, env = "SWARM_MODEL", hide = true, value_name = "MODEL")]
    pub lead_model: Option<String>,
    /// The lead's permission mode, which a teammate gets unless --permission-mode or its
    /// definition says otherwise (only its environment twin is meant to be used)
    #[arg(
        long,
        env = "SWARM_PERMISSION_MODE",
        default_value = "default",
        value_parser = mode_or_default,
        hide = true,
        value_name = "MODE"
    )]
    pub lead_permission_mode: PermissionMode,
    /// Allow rules teammates inherit, e.g. 'Bash(cargo test:*)' (repeatable)
    #[arg(long = "allow", value_name = "RULE", value_parser = allow_rule)]
    pub allow: Vec<AllowRule>,
    /// Stop after this many model turns per piece of work [default: the agent definition's, else 200]
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// This teammate's own budget (the team's, from `swarm run`, applies too)
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// The teammate's context window in tokens; compacted at 80 % of it [default: the model's, from swarm's table]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
}

/// How the team's worktree branches land (`swarm run` records them for the team).
#[derive(Debug, Args, Clone, Default)]
pub struct MergeOpts {
    /// The check to run after each merge, a shell command [default: the team's, else swarm.check in .claude/settings.json]
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,
    /// The branch to land on [default: the team's, else the branch the project's checkout is on]
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
    /// How a branch lands: merge, rebase or squash [default: the team's, else merge]
    #[arg(long, value_name = "S")]
    pub merge_strategy: Option<swarm_team::merge::Strategy>,
}

impl MergeOpts {
    pub fn options(&self, dry_run: bool) -> swarm_team::merge::Options {
        swarm_team::merge::Options {
            into: self.into.clone(),
            check: self.check.clone(),
            strategy: self.merge_strategy,
            dry_run,
            completed_work_only: false,
            restarts_owners: false,
        }
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The team [default: --team, else the only team]
    pub team: Option<String>,
    #[command(flatten)]
    pub merge: MergeOpts,
    /// Only list what would be queued and merged
    #[arg(long)]
    pub dry_run: bool,
    /// Put the held entry of this branch back in the queue, then run the queue
    #[arg(long, value_name = "BRANCH", conflicts_with = "dry_run")]
    pub retry: Option<String>,
    /// List the queue's entries and their states, and change nothing
    #[arg(long, conflicts_with_all = ["check", "into", "dry_run", "retry"])]
    pub status: bool,
}

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The teammate to stop
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Every teammate
    #[arg(long)]
    pub all: bool,
    /// How long to wait for a teammate to agree and exit before terminating it
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub timeout: humantime::Duration,
    /// Do not ask: terminate at once
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct LeadArgs {
    /// Restore the lead's conversation and restart its unfinished teammates (`swarm resume`)
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Leave the teammates running when the lead stops
    #[arg(long)]
    pub keep_team: bool,
    /// Run a lead agent on the goal in this file (without it, the lead only supervises)
    #[arg(long, value_name = "FILE")]
    pub goal_file: Option<PathBuf>,
    /// Who approves plans and permissions: lead (its model) or human (swarm approve)
    #[arg(long, default_value = "lead", value_name = "WHO")]
    pub approver: Approver,
    /// The most teammates the lead agent may spawn
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// Where the team works [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    #[command(flatten)]
    pub engine: EngineOpts,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What the team should achieve
    pub goal: String,
    /// The most teammates the lead may spawn
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// Who approves plans and permissions: lead (its model) or human (swarm approve)
    #[arg(long, default_value = "lead", value_name = "WHO")]
    pub approver: Approver,
    /// Do not attach to the team window: wait for the end, telling progress on stderr, and
    /// print the report (as one JSON object with --json)
    #[arg(long)]
    pub no_attach: bool,
    /// Stream what happens as JSON lines on stdout (one object a line, with its "type" and
    /// "time"), ending with the report; implies --no-attach
    #[arg(long)]
    pub events: bool,
    /// Keep the team's tmux window when the run ends (its finished panes stay to look at)
    #[arg(long)]
    pub keep: bool,
    /// Where the team works [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    #[command(flatten)]
    pub engine: EngineOpts,
    /// The whole team's budget
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// How teammates' worktree branches land: the team's merge queue
    #[command(flatten)]
    pub merge: MergeOpts,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The team [default: the unfinished team whose lead worked in this directory]
    pub team: Option<String>,
    /// Do not attach to the team window: wait for the end and print the report
    #[arg(long)]
    pub no_attach: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Do not attach: run to the end and exit 0 only if the job's check passes
    #[arg(long)]
    pub no_attach: bool,
    /// How many teammates (1-3)
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// Where to make the scratch repository [default: a new directory under the system temp dir]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the team's files afterwards (they are deleted by default)
    #[arg(long)]
    pub keep: bool,
    /// The job: toolkit (the shared checkout, a plan approval) or worktrees (a worktree per teammate, landed by the merge queue with a check)
    #[arg(long, default_value = "toolkit", value_name = "JOB")]
    pub job: swarm_demo::job::Job,
}

/// A dollar amount above zero.
fn dollars(value: &str) -> Result<f64, Error> {
    match value.trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(Error::usage(format!(
            "invalid amount {value:?}: give US dollars above zero, e.g. --budget-usd 5 or 2.50"
        ))),
    }
}

/// A token count above zero.
fn token_count(value: &str) -> Result<u64, Error> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::usage(format!(
            "invalid token count {value:?}: give a whole number above zero, e.g. --budget-tokens 500000"
        ))),
    }
}

/// An allow rule for one of swarm's tools: a misspelt tool would otherwise allow nothing,
/// silently.
fn allow_rule(value: &str) -> Result<AllowRule, Error> {
    let rule: AllowRule = value.parse()?;
    if ToolName::parse(&rule.tool).is_some() {
        return Ok(rule);
    }
    let known: Vec<&str> = ToolName::ALL
        .into_iter()
        .chain(ToolName::LEAD)
        .map(ToolName::as_str)
        .fold(Vec::new(), |mut names, n| {
            if !names.contains(&n) {
                names.push(n);
            }
            names
        });
    Err(Error::usage(format!(
        "unknown tool '{}' in --allow '{value}'; known tools: {}",
        rule.tool,
        known.join(", ")
    )))
}

/// A palette colour, checked by the roster's own rule.
fn colour(value: &str) -> Result<String, Error> {
    roster::check_colour(value).map(|()| value.to_owned())
}

/// A permission mode, where an empty value (an environment variable set to nothing) is
/// the default mode.
fn mode_or_default(value: &str) -> Result<PermissionMode, Error> {
    if value.is_empty() {
        return Ok(PermissionMode::Default);
    }
    value.parse()
}
