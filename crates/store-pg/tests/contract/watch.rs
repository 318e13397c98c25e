//! The watches' contract: a watch on each topic wakes soon after another handle (another
//! process) writes what it concerns, and a watch on one agent's inbox is not woken by
//! another's. Each topic's place is written once before it is watched, since the file
//! store watches directories that exist.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use crate::backends::{Team, agent, member};
use crate::contract;
use swarm_store::approvals::from_permission;
use swarm_store::mailbox::Envelope;
use swarm_store::protocol::PermissionRequest;
use swarm_store::seam::{Backend, Hold, Topic};
use swarm_store::state::{Activity, AgentState};
use swarm_store::tasks::NewTask;

contract!(
    a_watch_wakes_after_another_handles_write,
    a_watch_on_one_inbox_is_not_woken_by_another,
);

/// How long a wake-up may take before the test fails (the seam promises "soon").
const SOON: Duration = Duration::from_secs(10);

fn watch(team: &Team, topic: Topic) -> (Hold, mpsc::Receiver<()>) {
    let (rang, rings) = mpsc::channel();
    let hold = team.backend().watch(
        topic,
        Box::new(move || {
            let _ = rang.send(());
        }),
    );
    (hold, rings)
}

/// `write` (on another handle) wakes a watch on `topic` made before it.
fn wakes(team: &Team, topic: Topic, write: impl FnOnce(&dyn Backend)) {
    let what = format!("{topic:?}");
    let (_hold, rings) = watch(team, topic);
    while rings.try_recv().is_ok() {}
    write(&*team.open());
    assert!(
        rings.recv_timeout(SOON).is_ok(),
        "{}: a watch on {what} was not woken",
        team.kind
    );
}

fn task(subject: &str) -> NewTask {
    NewTask {
        subject: subject.into(),
        ..NewTask::default()
    }
}

fn request(id: &str) -> PermissionRequest {
    PermissionRequest {
        request_id: id.into(),
        agent_id: "bob".into(),
        tool_name: "Bash".into(),
        tool_use_id: "t".into(),
        description: "run ls".into(),
        input: json!({"command": "ls"}),
        permission_suggestions: Vec::new(),
    }
}

fn send(store: &dyn Backend, to: &str, text: &str) {
    store
        .mail()
        .send(to, Envelope::new("team-lead", text))
        .unwrap();
}

fn a_watch_wakes_after_another_handles_write(team: &Team) {
    team.add(&["bob", "carol"]);
    let (bob, carol) = (agent("bob"), agent("carol"));
    let idle = AgentState::new(Activity::Idle);
    // Each place written once, so it exists to be watched.
    send(team.backend(), "bob", "first");
    team.agents().write_state(&bob, &idle).unwrap();
    team.tasks().create(task("first")).unwrap();
    team.approvals()
        .record(&from_permission(&request("perm-1-a")))
        .unwrap();
    wakes(team, Topic::Inbox(bob.clone()), |s| send(s, "bob", "hi"));
    wakes(team, Topic::Mail, |s| send(s, "carol", "hi"));
    wakes(team, Topic::Inbox(bob.clone()), |s| {
        let key = s.mail().read_unread(&bob).unwrap()[0].key.clone();
        s.mail().ack(&bob, &[key]).unwrap();
    });
    wakes(team, Topic::State(bob.clone()), |s| {
        s.agents().write_state(&bob, &idle).unwrap()
    });
    wakes(team, Topic::States, |s| {
        s.agents().write_state(&carol, &idle).unwrap()
    });
    wakes(team, Topic::Tasks, |s| {
        s.tasks().create(task("second")).unwrap();
    });
    wakes(team, Topic::Tasks, |s| {
        s.tasks().claim("1", "bob", false).unwrap().unwrap();
    });
    wakes(team, Topic::Roster, |s| {
        s.roster().add_member(member("dave")).unwrap();
    });
    wakes(team, Topic::Approvals, |s| {
        s.approvals()
            .record(&from_permission(&request("perm-2-b")))
            .unwrap();
    });
}

fn a_watch_on_one_inbox_is_not_woken_by_another(team: &Team) {
    team.add(&["bob", "carol"]);
    send(team.backend(), "bob", "first");
    send(team.backend(), "carol", "first");
    let (_bob, bob_rings) = watch(team, Topic::Inbox(agent("bob")));
    let (_carol, carol_rings) = watch(team, Topic::Inbox(agent("carol")));
    while bob_rings.try_recv().is_ok() || carol_rings.try_recv().is_ok() {}
    send(&*team.open(), "bob", "only bob");
    assert!(bob_rings.recv_timeout(SOON).is_ok(), "bob's watch woken");
    assert!(
        carol_rings
            .recv_timeout(Duration::from_millis(200))
            .is_err(),
        "{}: carol's watch woken by bob's mail",
        team.kind
    );
}
