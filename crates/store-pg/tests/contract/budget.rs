//! The budget's contract: limits written only when there are some and read from any
//! handle, each agent's total replaced (a running total, not increments), the team's spend
//! the sum of them, and an agent's ledger the same figures.

use crate::backends::{Team, agent};
use crate::contract;
use swarm_util::meter::{Limits, Spend};

contract!(the_team_spends_the_sum_of_its_agents_totals);

fn spend(tokens: u64, usd: f64) -> Spend {
    Spend {
        tokens,
        usd,
        unpriced_tokens: 1,
        calls: 2,
    }
}

fn the_team_spends_the_sum_of_its_agents_totals(team: &Team) {
    let budget = team.budget();
    assert_eq!(budget.limits(), Limits::default());
    assert_eq!(budget.team_spent(), Spend::default());
    budget.write_limits(&Limits::default()).unwrap();
    assert!(budget.limits().is_none());
    let limits = Limits {
        usd: Some(1.5),
        tokens: Some(9000),
    };
    budget.write_limits(&limits).unwrap();
    assert_eq!(team.open().budget().limits(), limits);
    let bob = agent("bob");
    budget.record_spend(&bob, &spend(100, 0.5)).unwrap();
    budget.record_spend(&bob, &spend(300, 0.75)).unwrap();
    budget
        .record_spend(&agent("team-lead"), &spend(50, 0.25))
        .unwrap();
    assert_eq!(team.open().budget().spent(&bob), spend(300, 0.75));
    assert_eq!(budget.spent(&agent("carol")), Spend::default());
    let total = budget.team_spent();
    assert_eq!(
        (total.tokens, total.unpriced_tokens, total.calls),
        (350, 2, 4)
    );
    assert!((total.usd - 1.0).abs() < 1e-12);
    let ledger = budget.ledger(&bob);
    assert_eq!(ledger.own(), spend(300, 0.75));
    assert_eq!(ledger.team(), (limits, total));
    ledger.record(&spend(400, 1.0));
    assert_eq!(budget.spent(&bob), spend(400, 1.0));
    assert_eq!(team.open().budget().ledger(&bob).team().1.tokens, 450);
}
