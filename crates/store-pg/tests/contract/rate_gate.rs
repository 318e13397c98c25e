//! The rate gates' contract: one gate per provider, whose moment only moves later (a
//! running spell keeps its start), seen from any handle; six closers at once never move a
//! gate earlier than a moment already returned, and lose no provider's gate.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::backends::Team;
use crate::contract;
use swarm_util::clock;
use swarm_util::meter::RateLimit;

contract!(
    a_gate_only_moves_later,
    six_closers_at_once_never_move_a_gate_earlier,
);

fn spell(until_ms: i64, since_ms: i64, by: &str) -> RateLimit {
    RateLimit {
        until_ms,
        reason: format!("429 for {by}"),
        since_ms,
        by: by.into(),
    }
}

fn a_gate_only_moves_later(team: &Team) {
    let gate = team.rate_gate();
    let now = clock::now_ms();
    let far = now + 60_000;
    let key = "scripted http://t.invalid:1";
    assert_eq!(gate.read(key).unwrap(), None);
    assert_eq!(
        gate.close(key, spell(far, now, "alice")).unwrap(),
        spell(far, now, "alice")
    );
    let kept = gate
        .close(key, spell(far - 10_000, now + 5, "bob"))
        .unwrap();
    assert_eq!(kept, spell(far, now, "alice"), "earlier: nothing changes");
    let later = gate
        .close(key, spell(far + 1_000, now + 9, "carol"))
        .unwrap();
    assert_eq!(
        later,
        spell(far + 1_000, now, "carol"),
        "the running spell's start"
    );
    assert_eq!(team.open().rate_gate().read(key).unwrap(), Some(later));
    let other = "openai http://t.invalid:2";
    assert_eq!(gate.read(other).unwrap(), None, "a gate per provider");
    gate.close(other, spell(far - 5_000, now, "dave")).unwrap();
    assert_eq!(gate.read(other).unwrap().unwrap().by, "dave");
    // A spell that is over is replaced whole.
    let over = "over http://t.invalid:3";
    gate.close(over, spell(now - 1_000, now - 2_000, "erin"))
        .unwrap();
    let fresh = gate.close(over, spell(far, now, "frank")).unwrap();
    assert_eq!(fresh, spell(far, now, "frank"));
}

fn six_closers_at_once_never_move_a_gate_earlier(team: &Team) {
    const CLOSERS: i64 = 6;
    const ROUNDS: i64 = 40;
    const BASE: i64 = 4_000_000_000_000;
    // Moments that mostly move later (so closers often write at once) but out of order
    // among the closers: a lost update (two merges of one reading, the earlier written
    // last) shows as a gate earlier than a moment already returned.
    let until = |i: i64, round: i64| {
        BASE + round * 1_000 + ((round * 7_919 + i * 104_729) % 2_997) * 10 + i
    };
    let returned = AtomicI64::new(0);
    std::thread::scope(|scope| {
        for i in 0..CLOSERS {
            let (gate, returned) = (team.open().rate_gate(), &returned);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let mine = until(i, round);
                    // Returned before this close began: committed, so never undone.
                    let floor = returned.load(Ordering::SeqCst);
                    let shared = gate
                        .close("shared", spell(mine, 0, &i.to_string()))
                        .unwrap()
                        .until_ms;
                    assert!(shared >= mine && shared >= floor, "moved earlier");
                    returned.fetch_max(shared, Ordering::SeqCst);
                    gate.close(&format!("own{i}"), spell(mine, 0, "x")).unwrap();
                }
            });
        }
    });
    let gate = team.rate_gate();
    let top = |closers: std::ops::Range<i64>| {
        closers
            .flat_map(|i| (0..ROUNDS).map(move |r| until(i, r)))
            .max()
            .unwrap()
    };
    assert_eq!(
        gate.read("shared").unwrap().unwrap().until_ms,
        top(0..CLOSERS),
        "{}",
        team.kind
    );
    for i in 0..CLOSERS {
        let own = gate.read(&format!("own{i}")).unwrap().unwrap();
        assert_eq!(own.until_ms, top(i..i + 1));
    }
}
