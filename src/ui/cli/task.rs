//! `swarm task ...`: the shared task list by hand.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::identity::Actor;
use crate::ui::cli::output::{print_json, task_detail, task_line};
use crate::ui::cli::style;
use swarm::error::{Error, Result};
use swarm_config::hooks::{Hooks, Runner};
use swarm_config::permissions::PermissionMode;
use swarm_store::TaskBoard;
use swarm_store::roster::TeamConfig;
use swarm_store::tasks::leases;
use swarm_store::tasks::{NewTask, Status, Task, TaskPatch};
use swarm_team::toolset::task_events::{self, Created, one_line};
use swarm_util::error::{Base as _, exit};
use swarm_util::names::LEAD;
use swarm_util::table::{self, Align, Cell, Look, Table};
use swarm_util::text::printable;

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task
    Add(AddTaskArgs),
    /// List tasks
    List(ListTasksArgs),
    /// Show one task
    Show {
        /// The task's id
        id: String,
    },
    /// Change fields of a task
    Update(UpdateTaskArgs),
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

#[derive(Debug, Args)]
pub struct AddTaskArgs {
    /// A short title in the imperative ("Write the parser")
    pub subject: String,
    /// What to do, in detail
    #[arg(long, short, default_value = "")]
    pub description: String,
    /// Present-continuous text shown while the task runs ("Writing tests")
    #[arg(long)]
    pub active_form: Option<String>,
    /// A task that must be completed first (repeatable)
    #[arg(long = "blocked-by", value_name = "ID")]
    pub blocked_by: Vec<String>,
    /// Files the task will touch, relative to the project (comma-separated or repeated);
    /// others editing them are warned
    #[arg(long, value_name = "PATHS")]
    pub files: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ListTasksArgs {
    /// Only tasks with this status: pending, in_progress or completed
    #[arg(long)]
    pub status: Option<String>,
    /// Only tasks this member owns
    #[arg(long, value_name = "AGENT")]
    pub owner: Option<String>,
    /// Include internal tasks
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct UpdateTaskArgs {
    /// The task's id
    pub id: String,
    /// New title
    #[arg(long)]
    pub subject: Option<String>,
    /// New description
    #[arg(long, short)]
    pub description: Option<String>,
    /// New present-continuous text shown while the task runs
    #[arg(long)]
    pub active_form: Option<String>,
    /// pending, in_progress or completed
    #[arg(long)]
    pub status: Option<String>,
    /// New owner; an empty string clears it
    #[arg(long)]
    pub owner: Option<String>,
    /// Add a blocker (repeatable)
    #[arg(long = "blocked-by", value_name = "ID")]
    pub blocked_by: Vec<String>,
    /// Add a task this one blocks (repeatable)
    #[arg(long = "blocks", value_name = "ID")]
    pub blocks: Vec<String>,
}

/// Runs one task command; its exit code is 0, or [`exit::NO_READY_TASK`] when `next` finds
/// nothing to claim.
pub fn run(ctx: &Ctx, cmd: TaskCommand) -> Result<u8> {
    let store = ctx.team()?;
    let _team = store.team();
    // The team must exist: a task list without a roster would be nobody's.
    let config = store.roster().load()?;
    let board = Board {
        ctx,
        config,
        tasks: store.tasks(),
    };
    match cmd {
        TaskCommand::Add(args) => board.add(args),
        TaskCommand::List(args) => board.list(&args),
        TaskCommand::Show { id } => board.show_one(&id),
        TaskCommand::Update(args) => board.update(args),
        TaskCommand::Claim {
            id,
            agent,
            busy_check,
        } => board.claim(&id, &agent, busy_check),
        TaskCommand::Next { agent } => return board.next(&agent),
        TaskCommand::Done { id } => board.done(&id),
        TaskCommand::Release { agent } => board.release(&agent),
        TaskCommand::Delete { id } => board.delete(&id),
    }?;
    Ok(exit::SUCCESS)
}

/// The team's task list as one command at this command line sees it: who acts, the
/// roster the names are checked against, and the list itself.
struct Board<'a> {
    ctx: &'a Ctx,
    config: TeamConfig,
    tasks: &'a dyn TaskBoard,
}

impl Board<'_> {
    /// Prints one task: its line, or its JSON.
    fn print(&self, t: &Task) {
        if self.ctx.json() {
            print_json(t);
        } else {
            println!("{}", task_line(t));
        }
    }

    fn add(&self, args: AddTaskArgs) -> Result<()> {
        let files = leases::normalize_all(&args.files)?;
        let runner = person_hooks(self.ctx, &self.config);
        let created = hooks(runner.as_ref()).create(
            self.tasks,
            NewTask {
                subject: args.subject,
                description: args.description,
                active_form: args.active_form,
                blocked_by: args.blocked_by,
                metadata: leases::with_files(None, &files),
            },
        )?;
        match created {
            Created::Kept(task) => {
                self.print(&task);
                Ok(())
            }
            Created::Refused { task, feedback } => Err(Error::conflict(format!(
                "a TaskCreated hook refused task #{} and it was removed: {}",
                task.id,
                one_line(&feedback)
            ))),
        }
    }

    fn list(&self, args: &ListTasksArgs) -> Result<()> {
        let status = args.status.as_deref().map(Status::parse).transpose()?;
        let every = self.tasks.list()?;
        let tasks: Vec<&Task> = every
            .iter()
            .filter(|t| args.all || !t.is_internal())
            .filter(|t| status.is_none_or(|s| t.status == s))
            .filter(|t| args.owner.as_deref().is_none_or(|o| t.owned_by(o)))
            .collect();
        if self.ctx.json() {
            print_json(&tasks);
        } else if tasks.is_empty() {
            println!("no tasks");
        } else {
            let shown: Vec<Task> = tasks
                .iter()
                .map(|t| still_blocking((*t).clone(), &every))
                .collect();
            print!("{}", task_table(&shown, &self.config, style::stdout()));
        }
        Ok(())
    }

    fn show_one(&self, id: &str) -> Result<()> {
        let task = self.tasks.get(id)?;
        if self.ctx.json() {
            print_json(&task);
        } else {
            println!("{}", task_detail(&task));
        }
        Ok(())
    }

    fn update(&self, args: UpdateTaskArgs) -> Result<()> {
        let id = args.id;
        if let Some(o) = args.owner.as_deref().filter(|o| !o.is_empty()) {
            self.config.require(o)?;
        }
        if let Some(new) = &args.owner {
            self.check_reassign(&id, new)?;
        }
        let patch = TaskPatch {
            subject: args.subject,
            description: args.description,
            active_form: args.active_form,
            status: args.status.as_deref().map(Status::parse).transpose()?,
            owner: args.owner.map(Some),
            add_blocked_by: args.blocked_by,
            add_blocks: args.blocks,
            metadata: None,
        };
        self.print(&self.tasks.update(&id, patch)?);
        Ok(())
    }

    /// As the TaskUpdate tool has it: a teammate takes or frees tasks, and only the lead
    /// takes one away from someone else (a person leads the team).
    fn check_reassign(&self, id: &str, new: &str) -> Result<()> {
        let Actor::Agent { name, .. } = &self.ctx.actor else {
            return Ok(());
        };
        let current = self.tasks.get(id)?;
        if let Some(held) = current.owner.as_deref()
            && !name.is_lead()
            && !current.owned_by(name.as_str())
            && !current.owned_by(new)
        {
            return Err(Error::usage(format!(
                "task #{id} is owned by {held}; only {LEAD} reassigns it, and you are {name} (SWARM_AGENT_NAME)"
            )));
        }
        Ok(())
    }

    fn claim(&self, id: &str, agent: &str, busy_check: bool) -> Result<()> {
        self.config.require(agent)?;
        let task = self
            .tasks
            .claim(id, agent, busy_check)?
            .map_err(|r| r.into_error(id, agent))?;
        self.print(&task);
        Ok(())
    }

    /// Claims the first ready task; the exit code says whether there was one.
    fn next(&self, agent: &str) -> Result<u8> {
        self.config.require(agent)?;
        if let Some(task) = self.tasks.next(agent)? {
            self.print(&task);
            return Ok(exit::SUCCESS);
        }
        if self.ctx.json() {
            println!("null");
        } else {
            println!("no ready task for {agent}");
        }
        Ok(exit::NO_READY_TASK)
    }

    fn done(&self, id: &str) -> Result<()> {
        let current = self.tasks.get(id)?;
        let runner = person_hooks(self.ctx, &self.config);
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
        self.print(&self.tasks.update(id, patch)?);
        Ok(())
    }

    fn release(&self, owner: &str) -> Result<()> {
        let released = self.tasks.release(owner)?;
        if self.ctx.json() {
            print_json(&released);
        } else if released.is_empty() {
            println!("{owner} owns no open tasks");
        } else {
            for t in &released {
                println!("released {}", task_line(t));
            }
        }
        Ok(())
    }

    fn delete(&self, id: &str) -> Result<()> {
        let task = self.tasks.delete(id)?;
        if self.ctx.json() {
            print_json(&json!({"deleted": task.id}));
        } else {
            println!("deleted task #{}", task.id);
        }
        Ok(())
    }
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
        hooks: Hooks::load(&cwd, &ctx.profile.settings.dirs),
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
