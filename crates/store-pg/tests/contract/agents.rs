//! The agents' contract: a state replaced whole and read back from any handle, listed
//! lead first; an exit reported once per instance however many observers race; one lead
//! at a time, a lead's place free again when its hold is dropped, and looking for a lead
//! never makes a starting one refuse.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::backends::{Team, agent};
use crate::contract;
use swarm_store::state::{Activity, AgentState};

contract!(
    a_state_is_replaced_whole_and_listed_lead_first,
    an_exit_is_reported_once_per_instance,
    one_lead_at_a_time,
    looking_for_a_lead_never_makes_a_starting_lead_refuse,
);

fn state(activity: Activity, task: Option<&str>) -> AgentState {
    let mut s = AgentState::new(activity);
    s.current_task = task.map(str::to_owned);
    s.cost_usd = 0.25;
    s
}

fn a_state_is_replaced_whole_and_listed_lead_first(team: &Team) {
    let (bob, carol, lead) = (agent("bob"), agent("carol"), agent("team-lead"));
    assert_eq!(team.agents().read_state(&bob), None);
    assert!(team.agents().all_states().is_empty());
    let working = state(Activity::Working, Some("3"));
    team.agents().write_state(&bob, &working).unwrap();
    assert_eq!(team.open().agents().read_state(&bob), Some(working));
    let idle = state(Activity::Idle, None);
    team.agents().write_state(&bob, &idle).unwrap();
    assert_eq!(team.open().agents().read_state(&bob), Some(idle.clone()));
    team.agents()
        .write_state(&carol, &state(Activity::Starting, None))
        .unwrap();
    team.agents()
        .write_state(&lead, &state(Activity::Working, None))
        .unwrap();
    let names: Vec<String> = team
        .agents()
        .all_states()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["team-lead", "bob", "carol"]);
    team.agents().remove_state(&bob).unwrap();
    team.agents().remove_state(&bob).unwrap();
    assert_eq!(team.agents().read_state(&bob), None);
    let names: Vec<String> = team
        .agents()
        .all_states()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["team-lead", "carol"]);
}

fn an_exit_is_reported_once_per_instance(team: &Team) {
    const OBSERVERS: usize = 8;
    let bob = agent("bob");
    let claims: Vec<bool> = std::thread::scope(|scope| {
        let observers: Vec<_> = (0..OBSERVERS)
            .map(|_| {
                let (handle, bob) = (team.open(), &bob);
                scope.spawn(move || handle.agents().claim_exit_report(bob, "4242").unwrap())
            })
            .collect();
        observers.into_iter().map(|o| o.join().unwrap()).collect()
    });
    assert_eq!(
        claims.iter().filter(|c| **c).count(),
        1,
        "{}: one reporter of {claims:?}",
        team.kind
    );
    assert!(!team.agents().claim_exit_report(&bob, "4242").unwrap());
    assert!(
        team.agents().claim_exit_report(&bob, "4243").unwrap(),
        "a new instance"
    );
    assert!(
        team.agents()
            .claim_exit_report(&agent("carol"), "4242")
            .unwrap()
    );
}

fn one_lead_at_a_time(team: &Team) {
    let other = team.open();
    assert!(!team.agents().lead_running());
    let lead = team.agents().acquire_lead().unwrap();
    assert!(team.agents().lead_running());
    assert!(other.agents().lead_running(), "seen from another handle");
    let refused = other
        .agents()
        .acquire_lead()
        .err()
        .expect("a second lead is refused");
    assert!(refused.is_conflict(), "{refused}");
    assert!(
        refused
            .to_string()
            .starts_with("team 'contract' already has a lead running"),
        "{refused}"
    );
    drop(lead);
    assert!(!other.agents().lead_running(), "free once dropped");
    let again = other.agents().acquire_lead().unwrap();
    assert!(team.agents().lead_running());
    drop(again);
}

/// A looker asks over and over while a lead starts and stops: no start is refused, and the
/// looker saw a lead running at least once (else it proved nothing).
fn looking_for_a_lead_never_makes_a_starting_lead_refuse(team: &Team) {
    const STARTS: usize = 300;
    let stop = AtomicBool::new(false);
    let seen = AtomicUsize::new(0);
    let looker = team.open();
    let starter = team.open();
    let refused = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if looker.agents().lead_running() {
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut starts, mut refused) = (0, 0);
        while starts < STARTS || (seen.load(Ordering::Relaxed) == 0 && Instant::now() < deadline) {
            match starter.agents().acquire_lead() {
                Ok(lead) => drop(lead),
                Err(_) => refused += 1,
            }
            starts += 1;
        }
        stop.store(true, Ordering::Relaxed);
        refused
    });
    assert_eq!(
        refused, 0,
        "{}: a look made a starting lead refuse",
        team.kind
    );
    assert!(
        seen.load(Ordering::Relaxed) > 0,
        "the looker never saw a lead"
    );
}
