//! Budgets: limits on what a team, or one agent, may spend on model calls, and the client
//! wrapper that keeps to them.
//!
//! A [`BudgetedClient`] checks before every call whether this agent's own limits or the
//! team's are reached, and if so refuses it with [`LlmError::BudgetExhausted`] (final:
//! nothing retries it) without sending anything; after every response it adds the usage to
//! this agent's running total and hands the total to its [`Ledger`], which keeps it where
//! the rest of the team can add it up. So a call in flight always finishes, and no new one
//! starts once the limit is reached; several agents calling at once may overshoot it by at
//! most one response each.
//!
//! What counts: tokens are input + output + cache creation + cache read, every token the
//! provider bills for. Dollars come from the price table ([`estimate_cost_usd`]), by the
//! model the response names, else the one asked for. A model with no known price adds its
//! tokens to `tokens` and to `unpriced_tokens` but nothing to `usd`: a dollar limit cannot
//! see it (warned once per agent), so give a token limit too for such models.
//!
//! Knows nothing of files: the ledger is a trait the store implements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::config::estimate_cost_usd;
use crate::types::{LlmClient, LlmError, LlmFuture, Request, StreamEvent};
use swarm_util::meter::Usage;
use swarm_util::meter::{Ledger, Limits, Spend};

/// The lead is told once when the team's spend passes this share of a limit.
pub const NOTICE_SHARE: f64 = 0.8;

/// Every token a response bills for.
pub fn tokens(usage: &Usage) -> u64 {
    usage.input_tokens
        + usage.output_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
}

/// Adds one response's usage to `spend`; returns false when its model has no known price.
pub fn add_response(spend: &mut Spend, model: &str, asked: &str, usage: &Usage) -> bool {
    let n = tokens(usage);
    spend.tokens += n;
    spend.calls += 1;
    match estimate_cost_usd(model, usage).or_else(|| estimate_cost_usd(asked, usage)) {
        Some(usd) => {
            spend.usd += usd;
            true
        }
        None => {
            spend.unpriced_tokens += n;
            false
        }
    }
}

/// A client that keeps to its agent's limits and its team's (see the module comment).
pub struct BudgetedClient {
    inner: Arc<dyn LlmClient>,
    own_limits: Limits,
    ledger: Arc<dyn Ledger>,
    own: Mutex<Spend>,
    warned_unpriced: AtomicBool,
    gave_notice: AtomicBool,
}

impl BudgetedClient {
    pub fn new(inner: Arc<dyn LlmClient>, own_limits: Limits, ledger: Arc<dyn Ledger>) -> Self {
        let own = ledger.own();
        BudgetedClient {
            inner,
            own_limits,
            ledger,
            own: Mutex::new(own),
            warned_unpriced: AtomicBool::new(false),
            gave_notice: AtomicBool::new(false),
        }
    }

    /// Why no new model call may start, if none may.
    pub fn exhausted(&self) -> Option<String> {
        let own = *self.own.lock().unwrap();
        if let Some(what) = self.own_limits.reached(&own) {
            return Some(format!("this agent spent {what}"));
        }
        let (limits, spend) = self.ledger.team();
        limits
            .reached(&spend)
            .map(|what| format!("the team spent {what}"))
    }

    /// What the lead is told, the first time it asks after the team has spent
    /// [`NOTICE_SHARE`] of a limit; `None` before and after.
    pub fn team_notice_once(&self) -> Option<String> {
        if self.gave_notice.load(Ordering::Relaxed) {
            return None;
        }
        let (limits, spend) = self.ledger.team();
        let (share, what) = limits.most_spent(&spend)?;
        if share < NOTICE_SHARE || self.gave_notice.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(format!(
            "{:.0} % of the team's budget is spent ({what}): finish or cut scope. At the limit no new model call starts and the run ends.",
            (share * 100.0).floor()
        ))
    }

    fn record(&self, request: &Request, model: &str, usage: &Usage) {
        let (total, priced) = {
            let mut own = self.own.lock().unwrap();
            let priced = add_response(&mut own, model, &request.model, usage);
            (*own, priced)
        };
        self.ledger.record(&total);
        let usd_limit = || self.own_limits.usd.is_some() || self.ledger.team().0.usd.is_some();
        if !priced && usd_limit() && !self.warned_unpriced.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "no price is known for model {model}: a dollar budget does not see its tokens; only a token budget limits it"
            );
        }
    }
}

impl LlmClient for BudgetedClient {
    fn complete<'a>(
        &'a self,
        request: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> LlmFuture<'a> {
        Box::pin(async move {
            if let Some(why) = self.exhausted() {
                return Err(LlmError::BudgetExhausted(why));
            }
            let response = self.inner.complete(request, on_event, cancel).await?;
            self.record(request, &response.model, &response.usage);
            Ok(response)
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Response, StopReason};

    fn usage(input: u64, output: u64, create: u64, read: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: create,
            cache_read_input_tokens: read,
        }
    }

    #[test]
    fn tokens_count_every_kind_and_dollars_only_priced_models() {
        let mut s = Spend::default();
        assert!(add_response(
            &mut s,
            "claude-sonnet-4-5",
            "x",
            &usage(1000, 100, 10, 1)
        ));
        assert_eq!(s.tokens, 1111);
        let priced = estimate_cost_usd("claude-sonnet-4-5", &usage(1000, 100, 10, 1)).unwrap();
        assert!((s.usd - priced).abs() < 1e-12);
        // The model the response names wins; the one asked for prices an unnamed one.
        assert!(add_response(
            &mut s,
            "",
            "claude-sonnet-4-5",
            &usage(1, 0, 0, 0)
        ));
        assert!(!add_response(
            &mut s,
            "scripted-model",
            "scripted-model",
            &usage(50, 50, 0, 0)
        ));
        assert_eq!((s.tokens, s.unpriced_tokens, s.calls), (1212, 100, 3));
    }

    #[test]
    fn limits_are_reached_at_the_limit_not_before() {
        let l = Limits {
            usd: None,
            tokens: Some(1000),
        };
        let spent = |tokens| Spend {
            tokens,
            ..Spend::default()
        };
        assert_eq!(l.reached(&spent(999)), None);
        assert_eq!(
            l.reached(&spent(1000)).as_deref(),
            Some("1000 tokens of 1000")
        );
        let (share, what) = l.most_spent(&spent(800)).unwrap();
        assert!((share - 0.8).abs() < 1e-9);
        assert_eq!(what, "800 tokens of 1000");
        let usd = Limits {
            usd: Some(2.0),
            tokens: Some(1_000_000),
        };
        let s = Spend {
            tokens: 10,
            usd: 1.9,
            ..Spend::default()
        };
        assert_eq!(usd.reached(&s), None);
        // The larger share is the one that matters.
        assert_eq!(usd.most_spent(&s).unwrap().1, "$1.9000 of $2.00");
        let s = Spend { usd: 2.0, ..s };
        assert_eq!(usd.reached(&s).as_deref(), Some("$2.0000 of $2.00"));
        assert_eq!(Limits::default().reached(&s), None);
        assert_eq!(Limits::default().most_spent(&s), None);
        assert_eq!(usd.describe(), "$2.00 and 1000000 tokens");
    }

    struct Memory {
        team: Limits,
        others: Spend,
        mine: Mutex<Spend>,
    }

    impl Ledger for Memory {
        fn own(&self) -> Spend {
            *self.mine.lock().unwrap()
        }
        fn team(&self) -> (Limits, Spend) {
            let mut s = self.others;
            s.add(&self.mine.lock().unwrap());
            (self.team, s)
        }
        fn record(&self, total: &Spend) {
            *self.mine.lock().unwrap() = *total;
        }
    }

    struct Fixed(u64);

    impl LlmClient for Fixed {
        fn complete<'a>(
            &'a self,
            _: &'a Request,
            _: &'a mut (dyn FnMut(StreamEvent) + Send),
            _: &'a CancellationToken,
        ) -> LlmFuture<'a> {
            let n = self.0;
            Box::pin(async move {
                Ok(Response {
                    content: Vec::new(),
                    stop_reason: StopReason::EndTurn,
                    usage: usage(n / 2, n - n / 2, 0, 0),
                    model: "m".into(),
                    request_id: None,
                })
            })
        }
        fn describe(&self) -> String {
            "fixed".into()
        }
    }

    fn request() -> Request {
        Request {
            model: "m".into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 10,
            thinking: None,
            agent: None,
        }
    }

    fn call(c: &BudgetedClient) -> Result<(), LlmError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(c.complete(&request(), &mut |_| {}, &CancellationToken::new()))
            .map(|_| ())
    }

    #[test]
    fn calls_stop_at_the_agents_limit_or_the_teams_and_the_ledger_has_every_response() {
        let ledger = Arc::new(Memory {
            team: Limits {
                usd: None,
                tokens: Some(10_000),
            },
            others: Spend {
                tokens: 7_000,
                ..Spend::default()
            },
            mine: Mutex::new(Spend {
                tokens: 500,
                calls: 1,
                ..Spend::default()
            }),
        });
        let own = Limits {
            usd: None,
            tokens: Some(2_000),
        };
        let c = BudgetedClient::new(Arc::new(Fixed(1000)), own, ledger.clone());
        // 500 spent before this process: 1500, then 2500, then refused.
        call(&c).unwrap();
        call(&c).unwrap();
        let err = call(&c).unwrap_err();
        assert_eq!(
            err,
            LlmError::BudgetExhausted("this agent spent 2500 tokens of 2000".into())
        );
        assert_eq!(
            ledger.own(),
            Spend {
                tokens: 2500,
                calls: 3,
                unpriced_tokens: 2000,
                usd: 0.0
            }
        );
        // Without an own limit, the team's: 7000 + 2500, then 10500, then refused.
        let c = BudgetedClient::new(Arc::new(Fixed(1000)), Limits::default(), ledger.clone());
        call(&c).unwrap();
        assert!(
            matches!(call(&c), Err(LlmError::BudgetExhausted(m)) if m == "the team spent 10500 tokens of 10000")
        );
        let notice = c.team_notice_once().unwrap();
        assert!(notice.starts_with("105 % of the team's budget"), "{notice}");
        assert_eq!(c.team_notice_once(), None, "once");
    }
}
