//! Handing a held merge back to the teammate whose branch it is: a conflict becomes a task
//! "rebase the branch onto the target and resolve the conflicts in `<files>`", a failed
//! check a task "make the check pass", owned by that teammate and announced to it with a
//! `task_assignment`, as the lead's TaskUpdate would. The branch re-enters the queue by
//! itself once it has new commits (see [`crate::merge`]).
//!
//! Rounds are bounded: a branch is handed back at most [`MAX_ROUNDS`] times; after that
//! its entry stays held for a person. A teammate that is no longer on the roster gets no
//! task: its work is held for a person at once.

use serde_json::{Map, Value};

use crate::error::Result;
use swarm_store::Store;
use swarm_store::mailbox::Envelope;
use swarm_store::merge_queue::{Entry, EntryState};
use swarm_store::protocol::{Protocol, TaskAssignment};
use swarm_store::tasks::{NewTask, TaskPatch};
use swarm_util::clock;
use swarm_util::names::{AgentName, LEAD};

/// How many times one branch is handed back before it is left to a person.
pub const MAX_ROUNDS: usize = 2;
/// The task metadata key naming the branch a hand-back task is for.
const BRANCH_KEY: &str = "swarmMergeBranch";
/// The task metadata key that keeps a task out of every claim and list while it is set.
const HIDDEN_KEY: &str = "_internal";

/// What became of a held entry.
#[derive(Debug, Clone, PartialEq)]
pub enum HandBack {
    /// Given to its owner as this task.
    Task(String),
    /// Left for a person: the rounds are used up, or its owner is gone.
    Held(String),
}

/// Hands `entry` (a conflict or a failed check) back to its teammate, or says why not.
///
/// `restarts`: the caller restarts the teammate if it is not running (the lead does).
/// Its process's end is then claimed as reported before the task is made, so the lead's
/// supervisor, noticing it late, does not give the task (which needs its worktree) back
/// to the team to be taken by another teammate; the restart says it stopped instead.
pub fn hand_back(store: &Store, entry: &Entry, target: &str, restarts: bool) -> Result<HandBack> {
    let tasks = store.tasks();
    let rounds = tasks
        .list()?
        .iter()
        .filter(|t| {
            t.metadata
                .as_ref()
                .and_then(|m| m.get(BRANCH_KEY))
                .and_then(Value::as_str)
                == Some(entry.branch.as_str())
        })
        .count();
    if rounds >= MAX_ROUNDS {
        return Ok(HandBack::Held(format!(
            "handed back {rounds} times already; resolve it yourself"
        )));
    }
    let on_roster = store.roster().load()?.member(&entry.agent).is_some();
    if !on_roster {
        return Ok(HandBack::Held(format!(
            "{} is no longer in the team",
            entry.agent
        )));
    }
    let agent = AgentName::parse_any(&entry.agent)?;
    if restarts
        && let Some(gone) = store
            .agents()
            .read_state(&agent)
            .filter(|s| !store.still_runs(s))
    {
        store.agents().claim_exit_report(
            &agent,
            &swarm_store::liveness::instance(gone.token, gone.pid),
        )?;
    }
    let (subject, description) = match entry.state {
        EntryState::Conflict => (
            format!(
                "Rebase {} onto {target} and resolve conflicts in {}",
                entry.branch,
                entry.conflicts.join(", ")
            ),
            format!(
                "The merge queue could not merge your branch {branch}: it conflicts with {target} in {files}.\n\
                 In your worktree, rebase onto {target} (`git rebase {target}`), resolve the conflicts in {files} keeping both sides' intent, \
                 run the project's check, and commit. Then mark this task completed: the queue takes your branch again once it has new commits.",
                branch = entry.branch,
                files = entry.conflicts.join(", "),
            ),
        ),
        _ => (
            format!(
                "Make the check pass on {} merged into {target}",
                entry.branch
            ),
            format!(
                "Merged into {target}, your branch {branch} fails the project's check. Its last output:\n\n{output}\n\n\
                 In your worktree, bring in {target} (`git rebase {target}`), fix what the check reports, run it, and commit. \
                 Then mark this task completed: the queue takes your branch again once it has new commits.",
                branch = entry.branch,
                output = entry.check_output.as_deref().unwrap_or("(no output)"),
            ),
        ),
    };
    let mut metadata = Map::new();
    metadata.insert(BRANCH_KEY.to_owned(), entry.branch.clone().into());
    // Made hidden, claimed for its owner, then shown: an idle teammate (who would not have
    // the worktree) must not claim it in between.
    metadata.insert(HIDDEN_KEY.to_owned(), true.into());
    let task = tasks.create(NewTask {
        subject: subject.clone(),
        description: description.clone(),
        metadata: Some(metadata),
        ..NewTask::default()
    })?;
    if let Err(refusal) = tasks.claim(&task.id, &entry.agent, false)? {
        return Ok(HandBack::Held(format!(
            "task #{} could not be given to {}: {refusal:?}",
            task.id, entry.agent
        )));
    }
    let mut shown = Map::new();
    shown.insert(HIDDEN_KEY.to_owned(), Value::Null);
    tasks.update(
        &task.id,
        TaskPatch {
            metadata: Some(shown),
            ..TaskPatch::default()
        },
    )?;
    let assignment = Protocol::TaskAssignment(TaskAssignment {
        task_id: task.id.clone(),
        subject,
        description,
        assigned_by: LEAD.to_owned(),
        timestamp: clock::now_iso(),
    });
    store
        .mail()
        .deliver(&agent, Envelope::new(LEAD, assignment.to_text()))?;
    Ok(HandBack::Task(task.id))
}
