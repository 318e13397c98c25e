//! The roster's contract: the lead first, unique names in any letter case, several members
//! added each on its own, a removed member's open tasks back to pending.

use crate::backends::{Team, member};
use crate::contract;
use swarm_store::error::Error;
use swarm_store::tasks::{NewTask, Status};
use swarm_util::error::Base as _;

contract!(
    members_are_added_in_order_and_names_are_unique_in_any_case,
    several_members_are_added_each_on_its_own,
    a_removed_member_gives_back_its_open_tasks,
    an_update_that_fails_writes_nothing,
    a_team_is_used_from_inside_an_async_runtime,
);

fn names(team: &Team) -> Vec<String> {
    let config = team.roster().load().unwrap();
    config.members.into_iter().map(|m| m.name).collect()
}

fn members_are_added_in_order_and_names_are_unique_in_any_case(team: &Team) {
    team.add(&["bob", "carol"]);
    assert_eq!(names(team), ["team-lead", "bob", "carol"]);
    let taken = team.roster().add_member(member("BOB")).unwrap_err();
    assert!(taken.is_conflict(), "{taken}");
    assert!(
        taken
            .to_string()
            .contains("already has a member named 'bob'"),
        "{taken}"
    );
    let bob = &team.roster().load().unwrap().members[1];
    assert_eq!(bob.color.as_deref(), Some("blue"));
    assert_eq!(bob.agent_type.as_deref(), Some("general-purpose"));
    // Seen from another handle (another process) too.
    let other = team.open();
    assert_eq!(other.roster().load().unwrap().members.len(), 3);
}

fn several_members_are_added_each_on_its_own(team: &Team) {
    let results = team
        .roster()
        .add_members(vec![member("dave"), member("DAVE"), member("erin")])
        .unwrap();
    assert!(results[0].is_ok() && results[2].is_ok());
    assert!(results[1].as_ref().unwrap_err().is_conflict());
    assert_eq!(names(team), ["team-lead", "dave", "erin"]);
    // All refused: nothing written, and no error for the write.
    let results = team.roster().add_members(vec![member("Erin")]).unwrap();
    assert!(results[0].is_err());
    assert_eq!(names(team), ["team-lead", "dave", "erin"]);
}

fn a_removed_member_gives_back_its_open_tasks(team: &Team) {
    team.add(&["bob"]);
    let task = team
        .tasks()
        .create(NewTask {
            subject: "write".into(),
            ..NewTask::default()
        })
        .unwrap();
    team.tasks().claim(&task.id, "bob", false).unwrap().unwrap();
    let removed = team.roster().remove_member("bob").unwrap();
    assert_eq!(removed.member.name, "bob");
    assert_eq!(removed.released.len(), 1);
    let back = team.tasks().get(&task.id).unwrap();
    assert_eq!((back.owner, back.status), (None, Status::Pending));
    assert_eq!(names(team), ["team-lead"]);
    let unknown = team.roster().remove_member("bob").unwrap_err();
    assert!(unknown.is_not_found(), "{unknown}");
    let lead = team.roster().remove_member("team-lead").unwrap_err();
    assert!(lead.is_usage(), "{lead}");
}

fn an_update_that_fails_writes_nothing(team: &Team) {
    team.add(&["bob"]);
    let failed = team.roster().update(|config| {
        config.members[1].model = Some("changed".into());
        Err::<(), _>(Error::conflict("no"))
    });
    assert!(failed.unwrap_err().is_conflict());
    assert_eq!(team.roster().load().unwrap().members[1].model, None);
    team.roster()
        .update_member("bob", |m| m.model = Some("opus".into()))
        .unwrap();
    assert_eq!(
        team.open().roster().load().unwrap().members[1]
            .model
            .as_deref(),
        Some("opus")
    );
    let unknown = team.roster().update_member("nobody", |_| ()).unwrap_err();
    assert!(unknown.is_not_found());
}

/// The agents' loops and a run's wait call the store from inside a tokio runtime (of
/// either kind): every part works there, a hold is taken and let go, and a handle opened
/// and dropped there closes its connections without upsetting the runtime.
fn a_team_is_used_from_inside_an_async_runtime(team: &Team) {
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (i, runtime) in [current, multi].into_iter().enumerate() {
        runtime.block_on(async {
            let name = format!("bob{i}");
            team.roster().add_member(member(&name)).unwrap();
            team.roster()
                .update_member(&name, |m| m.color = Some("red".into()))
                .unwrap();
            let other = team.open();
            let run = other.merge_queue().acquire_run().unwrap();
            other.merge_queue().update(|q| q.entries.clear()).unwrap();
            drop(run);
            drop(other);
        });
        let config = team.roster().load().unwrap();
        let bob = config.member(&format!("bob{i}")).unwrap();
        assert_eq!(bob.color.as_deref(), Some("red"), "{}", team.kind);
    }
}
