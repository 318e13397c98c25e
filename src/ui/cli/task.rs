//! `swarm task ...`: the shared task list by hand.

use clap::Subcommand;
use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::identity::Actor;
use crate::ui::cli::output::{print_json, task_detail, task_line};
use crate::ui::cli::style;
use swarm_config::hooks::{Hooks, Runner};
use swarm_config::permissions::PermissionMode;
use swarm_store::names::LEAD;
use swarm_store::roster::TeamConfig;
use swarm_store::tasks::leases;
use swarm_store::tasks::{NewTask, Status, Task, TaskPatch};
use swarm_team::task_events::{self, Created, one_line};
use swarm_util::error::{Error, Result, exit};
use swarm_util::table::{self, Align, Cell, Look, Table};
use swarm_util::text::printable;

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

/// Runs one task command; its exit code is 0, or [`exit::NO_READY_TASK`] when `next` finds
/// nothing to claim.
pub fn run(ctx: &Ctx, cmd: TaskCommand) -> Result<u8> {
    let team = ctx.team()?;
    // The team must exist: a task list without a roster would be nobody's.
    let config = ctx.root.open(&team).roster().load()?;
    let store = ctx.root.open(&team);
    let list = store.tasks();
    let show = |t: &Task| {
        if ctx.json() {
            print_json(t);
        } else {
            println!("{}", task_line(t));
        }
    };
    match cmd {
        TaskCommand::Add {
            subject,
            description,
            active_form,
            blocked_by,
            files,
        } => {
            let files = leases::normalize_all(&files)?;
            let runner = person_hooks(ctx, &config);
            let created = hooks(runner.as_ref()).create(
                list,
                NewTask {
                    subject,
                    description,
                    active_form,
                    blocked_by,
                    metadata: leases::with_files(None, &files),
                },
            )?;
            match created {
                Created::Kept(task) => show(&task),
                Created::Refused { task, feedback } => {
                    return Err(Error::conflict(format!(
                        "a TaskCreated hook refused task #{} and it was removed: {}",
                        task.id,
                        one_line(&feedback)
                    )));
                }
            }
        }
        TaskCommand::List { status, owner, all } => {
            let status = status.as_deref().map(Status::parse).transpose()?;
            let every = list.list()?;
            let tasks: Vec<&Task> = every
                .iter()
                .filter(|t| all || !t.is_internal())
                .filter(|t| status.is_none_or(|s| t.status == s))
                .filter(|t| owner.as_deref().is_none_or(|o| t.owned_by(o)))
                .collect();
            if ctx.json() {
                print_json(&tasks);
            } else if tasks.is_empty() {
                println!("no tasks");
            } else {
                let shown: Vec<Task> = tasks
                    .iter()
                    .map(|t| still_blocking((*t).clone(), &every))
                    .collect();
                print!("{}", task_table(&shown, &config, style::stdout()));
            }
        }
        TaskCommand::Show { id } => {
            let task = list.get(&id)?;
            if ctx.json() {
                print_json(&task);
            } else {
                println!("{}", task_detail(&task));
            }
        }
        TaskCommand::Update {
            id,
            subject,
            description,
            active_form,
            status,
            owner,
            blocked_by,
            blocks,
        } => {
            if let Some(o) = owner.as_deref().filter(|o| !o.is_empty()) {
                config.require(o)?;
            }
            if let (Some(new), Actor::Agent { name, .. }) = (&owner, &ctx.actor) {
                // As the TaskUpdate tool has it: a teammate takes or frees tasks, and
                // only the lead takes one away from someone else.
                let current = list.get(&id)?;
                if let Some(held) = current.owner.as_deref()
                    && !name.is_lead()
                    && !current.owned_by(name.as_str())
                    && !current.owned_by(new)
                {
                    return Err(Error::usage(format!(
                        "task #{id} is owned by {held}; only {LEAD} reassigns it, and you are {name} (SWARM_AGENT_NAME)"
                    )));
                }
            }
            let patch = TaskPatch {
                subject,
                description,
                active_form,
                status: status.as_deref().map(Status::parse).transpose()?,
                owner: owner.map(Some),
                add_blocked_by: blocked_by,
                add_blocks: blocks,
                metadata: None,
            };
            show(&list.update(&id, patch)?);
        }
        TaskCommand::Claim {
            id,
            agent,
            busy_check,
        } => {
            config.require(&agent)?;
            let task = list
                .claim(&id, &agent, busy_check)?
                .map_err(|r| r.into_error(&id, &agent))?;
            show(&task);
        }
        TaskCommand::Next { agent } => {
            config.require(&agent)?;
            match list.next(&agent)? {
                Some(task) => show(&task),
                None => {
                    if ctx.json() {
                        println!("null");
                    } else {
                        println!("no ready task for {agent}");
                    }
                    return Ok(exit::NO_READY_TASK);
                }
            }
        }
        TaskCommand::Done { id } => {
            let current = list.get(&id)?;
            let runner = person_hooks(ctx, &config);
            if let Some(feedback) = hooks(runner.as_ref()).refuse_completion(&current) {
                return Err(Error::conflict(format!(
                    "a TaskCompleted hook refused to let task #{id} be completed: {}",
                    one_line(&feedback)
                )));
            }
            let patch = TaskPatch {
                status: Some(Status::Completed),
                ..TaskPatch::default()
            };
            show(&list.update(&id, patch)?);
        }
        TaskCommand::Release { agent: owner } => {
            let released = list.release(&owner)?;
            if ctx.json() {
                print_json(&released);
            } else if released.is_empty() {
                println!("{owner} owns no open tasks");
            } else {
                for t in &released {
                    println!("released {}", task_line(t));
                }
            }
        }
        TaskCommand::Delete { id } => {
            let task = list.delete(&id)?;
            if ctx.json() {
                print_json(&json!({"deleted": task.id}));
            } else {
                println!("deleted task #{}", task.id);
            }
        }
    }
    Ok(exit::SUCCESS)
}

/// `t` as a person reads it in a list: with only the blockers still in its way. A completed
/// or deleted blocker no longer blocks (as claiming has it), though the file keeps naming it.
fn still_blocking(mut t: Task, every: &[Task]) -> Task {
    t.blocked_by.retain(|b| {
        every
            .iter()
            .any(|o| &o.id == b && o.status != Status::Completed)
    });
    t
}

/// The task list as a table: columns as wide as their content, owners in their roster
/// colours, the subject cut with "…" to fit the terminal.
fn task_table(tasks: &[Task], config: &TeamConfig, look: Look) -> String {
    let mut t = Table::new(&[
        ("ID", Align::Right),
        ("STATUS", Align::Left),
        ("OWNER", Align::Left),
        ("BLOCKED BY", Align::Left),
        ("SUBJECT", Align::Left),
    ])
    .indent(0)
    .free(4);
    for task in tasks {
        let colour = match task.status {
            Status::Pending => None,
            Status::InProgress => Some(table::GREEN),
            Status::Completed => Some(table::DIM),
        };
        let owner = task.owner.as_deref().unwrap_or("-");
        let owner_colour = config
            .member(owner)
            .and_then(|m| table::palette(m.color.as_deref()));
        let blocked = if task.blocked_by.is_empty() {
            "-".to_owned()
        } else {
            task.blocked_by
                .iter()
                .map(|b| format!("#{b}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        t.row(vec![
            Cell::new(format!("#{}", task.id)),
            Cell::painted(task.status.as_str(), colour),
            Cell::painted(printable(owner), owner_colour),
            Cell::new(blocked),
            Cell::new(printable(&task.subject)),
        ]);
    }
    t.render(look)
}

/// The hooks of a task changed by hand, as whoever acts (a person leads the team), from
/// the directory they are in.
fn person_hooks(ctx: &Ctx, config: &TeamConfig) -> Option<Runner> {
    let cwd = std::env::current_dir().ok()?;
    Some(Runner {
        hooks: Hooks::load(&cwd, &ctx.settings.dirs),
        session_id: config.lead_session_id.clone().unwrap_or_default(),
        cwd,
        team: config.name.clone(),
        agent: ctx.actor.sender().to_owned(),
        agent_type: None,
    })
}

fn hooks(runner: Option<&Runner>) -> task_events::Hooks<'_> {
    task_events::Hooks {
        runner,
        mode: PermissionMode::Default,
    }
}
