//! Claude Code's agent-team files, safely: the rosters, one mailbox per agent, the shared
//! task list, plan and permission approvals, and each agent's state, as Claude Code
//! (2.1.x) lays them out under `~/.claude/teams/<team>/` and `~/.claude/tasks/<team>/`,
//! with the guarantees a team of processes needs: every write is atomic and durable before
//! it returns, a message is delivered exactly once (it stays in the inbox until
//! acknowledged by its id), a claim is a compare-and-set, and an approval is resolved once.
//! Writers take both a kernel `flock` and Claude Code's own `<file>.lock/` directory lock,
//! so they exclude each other and Claude Code's processes alike.
//!
//! A team is opened once through [`Teams`] (a [`Root`] and the backends the edge gives it)
//! and used through its [`Store`] handle, whose parts
//! are traits ([`Roster`], [`Mailboxes`], [`TaskBoard`], [`Approvals`], [`Agents`],
//! [`MergeQueue`], [`Budget`], [`LaunchRecords`], [`Worktrees`]) so a team may live in
//! another backend; [`file_store::FileStore`] is the one for Claude Code's files.
//!
//! ```
//! use swarm_store::mailbox::Envelope;
//! use swarm_store::roster::NewMember;
//! use swarm_store::tasks::NewTask;
//! use swarm_store::{Root, Teams};
//! use swarm_util::names::{AgentName, TeamName};
//!
//! # fn main() -> swarm_store::error::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! // The root is `~/.claude` for Claude Code's own teams.
//! let teams = Teams::new(Root::new(dir.path()));
//! let team = TeamName::new("docs")?;
//! // Made, and opened: the handle every later step goes through.
//! let store = teams.create_team(&team, Some("write the docs".into()), dir.path())?;
//! let bob = AgentName::new("bob")?;
//! store.roster().add_member(NewMember {
//!     name: bob.clone(),
//!     color: None,
//!     agent_type: None,
//!     model: None,
//!     prompt: None,
//!     plan_mode_required: false,
//!     cwd: dir.path().display().to_string(),
//! })?;
//!
//! // Read the roster.
//! let names: Vec<String> = store.roster().load()?.members.into_iter().map(|m| m.name).collect();
//! assert_eq!(names, ["team-lead", "bob"]);
//!
//! // Send bob a message: it waits in his inbox until he acknowledges it by its key.
//! store.mail().send("bob", Envelope::new("team-lead", "please write the README"))?;
//! let unread = store.mail().read_unread(&bob)?;
//! store.mail().ack(&bob, &[unread[0].key.clone()])?;
//! assert!(store.mail().read_unread(&bob)?.is_empty());
//!
//! // Create a task and claim it: a second claimer is refused.
//! let task = store.tasks().create(NewTask {
//!     subject: "Write the README".into(),
//!     ..NewTask::default()
//! })?;
//! let claimed = store.tasks().claim(&task.id, "bob", false)?;
//! assert_eq!(claimed.unwrap().owner.as_deref(), Some("bob"));
//! assert!(store.tasks().claim(&task.id, "carol", false)?.is_err());
//! # Ok(())
//! # }
//! ```
//!
//! Errors are the store's own [`error::Error`]: the failures every layer shares (whose
//! messages name the file involved and say what to do) and what only the store fails at
//! (a send in doubt, its database away, a process declared dead).
//! A file that does not parse is moved aside (`<file>.corrupt-<time>`), never emptied.
//! Nothing here starts a process, talks to a network or reads the environment.

pub mod approvals;
pub mod backends;
pub mod board;
pub mod budget;
pub mod documents;
pub mod error;
pub mod file_store;
mod files;
pub mod launch_record;
pub mod layout;
pub mod lead;
pub mod liveness;
pub mod mailbox;
pub mod merge_queue;
pub mod protocol;
pub mod roster;
pub mod seam;
pub mod state;
pub mod tasks;
pub mod teams;
pub mod worktrees;

pub use layout::Root;
pub use seam::{
    Agents, Approvals, Backend, Budget, Hold, LaunchRecords, Mailboxes, MergeQueue, Roster, Store,
    TaskBoard, Topic, Worktrees,
};
pub use teams::Teams;
