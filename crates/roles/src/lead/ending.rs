//! How a lead agent's run comes to an end, apart from a signal: every task completed, no
//! team at all (the lead answered the goal itself, or gave up), or a stall, which names
//! what it waits for so that nobody has to guess; and what the run's end says
//! ([`Outcome`]).

use swarm_store::tasks::Status;
use swarm_store::{Store, TaskBoard};
use swarm_team::life::status;
use swarm_util::names::LEAD;

/// How the lead's work ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The goal is met; what the run's result says.
    Done(String),
    Stopped(String),
    Failed(String),
    /// The team's budget is spent: "the team spent … of …".
    Budget(String),
}

impl Outcome {
    /// The lead's exit code for it, as the README's table has them.
    pub fn exit_code(&self) -> i32 {
        use swarm_util::error::exit;
        i32::from(match self {
            Outcome::Done(_) => exit::SUCCESS,
            Outcome::Stopped(_) => exit::INTERRUPTED,
            Outcome::Failed(_) => exit::MODEL,
            Outcome::Budget(_) => exit::BUDGET,
        })
    }

    /// The run's result line.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Done(result) => result.clone(),
            Outcome::Stopped(why) => format!("stopped: {why}"),
            Outcome::Failed(why) => format!("failed: {why}"),
            Outcome::Budget(why) => format!("the budget ended the run: {why}"),
        }
    }
}

/// How a lead's final text says that the goal needed no team and is met.
pub(super) const DONE_MARK: &str = "DONE:";

/// When a turn ended with no task and no teammate, the run is over: done if the lead said
/// so (see [`DONE_MARK`]), failed otherwise, with its words as the reason.
pub(super) fn without_a_team(store: &Store, last: &str) -> Option<Outcome> {
    let has_tasks = store
        .tasks()
        .list()
        .map_or(true, |t| t.iter().any(|t| !t.is_internal()));
    let has_teammates = store
        .roster()
        .load()
        .map_or(true, |r| r.members.iter().any(|m| m.name != LEAD));
    if has_tasks || has_teammates {
        return None;
    }
    let text = last.trim();
    let unmarked = text.trim_start_matches(['*', '#', '_', ' ']);
    Some(
        match unmarked
            .get(..DONE_MARK.len())
            .filter(|head| head.eq_ignore_ascii_case(DONE_MARK))
        {
            Some(_) => Outcome::Done(format!("done: {}", unmarked[DONE_MARK.len()..].trim())),
            None if text.is_empty() => Outcome::Failed(
                "the lead ended its turn without a task, a teammate or a word".to_owned(),
            ),
            None => Outcome::Failed(format!(
                "the lead ended its turn without a task or a teammate: {text}"
            )),
        },
    )
}

/// What a quiet team is waiting for: each open task, and what holds it.
pub(super) fn waiting_for(tasks: &dyn TaskBoard, seen: &status::TeamStatus) -> String {
    let Ok(list) = tasks.list() else {
        return "the task list, which cannot be read".to_owned();
    };
    let open: Vec<String> = list
        .iter()
        .filter(|t| !t.is_internal() && t.status != Status::Completed)
        .map(|t| {
            let blockers: Vec<&str> = t
                .blocked_by
                .iter()
                .filter(|b| {
                    list.iter()
                        .any(|x| &x.id == *b && x.status != Status::Completed)
                })
                .map(String::as_str)
                .collect();
            let why = match (&t.owner, blockers.is_empty()) {
                (_, false) => format!("blocked by #{}", blockers.join(", #")),
                (Some(owner), true) => match seen.member(owner) {
                    Some(m) if m.alive => {
                        format!("{} by {owner}, who is {}", t.status.as_str(), m.state)
                    }
                    _ => format!("owned by {owner}, who is gone"),
                },
                (None, true) => "unclaimed".to_owned(),
            };
            format!("#{} ({why})", t.id)
        })
        .collect();
    if open.is_empty() {
        "nothing: every task is completed".to_owned()
    } else {
        format!("task {}", open.join(", "))
    }
}

/// True when the list has tasks and every one is completed.
pub(super) fn all_done(tasks: &dyn TaskBoard) -> bool {
    tasks.list().is_ok_and(|t| {
        !t.is_empty()
            && t.iter()
                .filter(|t| !t.is_internal())
                .all(|t| t.status == Status::Completed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_store::layout::Root;
    use swarm_store::tasks::{NewTask, TaskPatch};
    use swarm_util::names::TeamName;

    #[test]
    fn a_stall_names_each_open_task_and_what_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone()).open(&team).unwrap();
        let tasks = store.tasks();
        let new = |subject: &str, blocked_by: Vec<String>| NewTask {
            subject: subject.into(),
            description: String::new(),
            active_form: None,
            blocked_by,
            metadata: None,
        };
        tasks.create(new("build", vec![])).unwrap();
        tasks.create(new("test", vec!["1".into()])).unwrap();
        tasks.create(new("docs", vec![])).unwrap();
        tasks
            .update(
                "1",
                TaskPatch {
                    owner: Some(Some("bob".into())),
                    status: Some(Status::InProgress),
                    ..TaskPatch::default()
                },
            )
            .unwrap();
        let seen = status::TeamStatus {
            team: "t".into(),
            description: None,
            tmux_reachable: true,
            members: Vec::new(),
            tasks: Default::default(),
            leases: Vec::new(),
            budget: None,
            open_owners: Vec::new(),
        };
        assert_eq!(
            waiting_for(tasks, &seen),
            "task #1 (owned by bob, who is gone), #2 (blocked by #1), #3 (unclaimed)"
        );
    }
}
