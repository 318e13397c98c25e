//! Approvals as durable state, with a person as the lead (no lead agent) and with a lead
//! agent that leaves them to a person: recorded by the teammate that asks, resolved exactly
//! once by `swarm approve`, expired when nobody answers in time or the teammate is gone.

use crate::harness::TestEnv;

#[test]
fn approving_in_a_team_with_no_requests_is_not_found() {
    let env = TestEnv::with_team("alpha", &[]);
    for args in [
        &["--team", "alpha", "approve", "plan_approval-1@x@alpha"][..],
        &[
            "--team",
            "alpha",
            "reject",
            "plan_approval-1@x@alpha",
            "--feedback",
            "no",
        ],
    ] {
        let out = env.run(args).failure(3);
        assert_eq!(
            out.stderr.trim(),
            "swarm: error: no request 'plan_approval-1@x@alpha' in team 'alpha'; see `swarm approvals`"
        );
    }
    assert!(!env.root.join("teams/alpha/approvals").exists());
}
