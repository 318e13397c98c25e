//! The model clients' retries, faults, stalls and cancellation against the scripted model
//! server over real HTTP on 127.0.0.1: the client scenarios E9–E17 of
//! docs/design/llm-api.md §4.4. Helpers are in `llm.rs`.
//!
//! Timing assertions are the scenarios' own numbers; every call also runs under a generous
//! overall timeout so that a hang fails the test instead of stalling the run.

use std::time::{Duration, Instant};

use serde_json::json;
use swarm_llm::{LlmError, StreamEvent};
use swarm_model_server::{Fault, ModelServer, Raw, Reply, Rule, Script};
use tokio_util::sync::CancellationToken;

use crate::llm::{
    block_start, block_stop, complete, complete_with, delta, frame, message_delta, message_start,
    reply_with_a_tool, request, scripted, serve, sse, text_of, tool_uses,
};

fn gaps(server: &ModelServer) -> Vec<f64> {
    let reqs = server.requests();
    reqs.windows(2)
        .map(|w| (w[1].received_at - w[0].received_at).as_secs_f64())
        .collect()
}

#[tokio::test]
async fn e9_429_with_retry_after_waits_a_second() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("rate limited")
                    .times(1)
                    .fault(Fault::status(429).retry_after("1")),
            )
            .default_reply(Reply::text("ok")),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("hi")).await;
    assert_eq!(text_of(out.ok()), "ok");
    assert_eq!(server.requests().len(), 2);
    let gap = gaps(&server)[0];
    assert!(gap >= 1.0, "second request {gap} s after the first");
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, 1);
    assert_eq!(retries[0].1, Duration::from_secs(1));
    assert!(retries[0].2.contains("429"), "{}", retries[0].2);
}

#[tokio::test]
async fn e10_529_twice_backs_off_one_second_then_two() {
    let server = serve(
        Script::new()
            .rule(Rule::new("overloaded").times(2).fault(Fault::status(529)))
            .default_reply(Reply::text("finally")),
    )
    .await;
    // Overload waits at the rate-limit gate, whatever the transient retry count says.
    let out = complete(
        scripted(&server, |c| c.max_retries = 0).as_ref(),
        &request("hi"),
    )
    .await;
    assert_eq!(text_of(out.ok()), "finally");
    assert_eq!(server.requests().len(), 3);
    // The chosen delays are exactly within the policy's bounds...
    let delays: Vec<f64> = out.retries().iter().map(|r| r.1.as_secs_f64()).collect();
    assert!((0.75..=1.0).contains(&delays[0]), "{delays:?}");
    assert!((1.5..=2.0).contains(&delays[1]), "{delays:?}");
    // ...and the server saw them, plus request latency (generous for a loaded machine).
    let g = gaps(&server);
    assert!(g[0] >= 0.75 && g[0] <= 1.0 + 0.25, "{g:?}");
    assert!(g[1] >= 1.5 && g[1] <= 2.0 + 0.25, "{g:?}");
}

#[tokio::test]
async fn e11_rate_limit_wait_exhausted_keeps_the_message_and_request_id() {
    let server = serve(Script::new().rule(Rule::new("always overloaded").fault(
        Fault::status(529).body(json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "ignored"})),
    )))
    .await;
    // Backoffs of about 1 s then 2 s: the second would pass a bound of 1.2 s.
    let client = scripted(&server, |c| c.rate_limit_wait = Duration::from_millis(1200));
    // The API's own message, then what to do about it.
    const HINT: &str = "; the rate limit outlasts the 1.2 s --rate-limit-wait allows: raise it (or SWARM_RATE_LIMIT_WAIT) to wait longer";
    let out = complete(client.as_ref(), &request("hi")).await;
    assert_eq!(server.requests().len(), 2);
    assert_eq!(out.retries().len(), 1);
    let err = out.err();
    assert_eq!(
        err,
        &LlmError::Api {
            status: 529,
            kind: "overloaded_error".into(),
            message: format!("Overloaded{HINT}"),
            request_id: Some("req_scripted_000002".into()),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "model API error 529 overloaded_error: Overloaded{HINT} (request-id req_scripted_000002)"
        )
    );
    let e = err.clone();
    assert_eq!(swarm::exit::exit_code(&e), swarm_util::error::exit::MODEL);
}

#[tokio::test]
async fn e12_client_errors_and_a_final_429_are_not_retried() {
    let cases: Vec<(&str, Fault, u16, &str)> = vec![
        ("s400", Fault::status(400), 400, "invalid_request_error"),
        ("s401", Fault::status(401), 401, "authentication_error"),
        ("s403", Fault::status(403), 403, "permission_error"),
        ("s404", Fault::status(404), 404, "not_found_error"),
        ("s413", Fault::status(413), 413, "request_too_large"),
        (
            "quota",
            Fault::status(429)
                .retry_after("1")
                .header("x-should-retry", "false"),
            429,
            "rate_limit_error",
        ),
        (
            // A spend limit: no header says so, only the body.
            "spend",
            Fault::status(429)
                .retry_after("1")
                .body(json!({"type": "error",
                "error": {"type": "rate_limit_error",
                          "message": "You have reached your specified workspace API usage limits.",
                          "details": {"error_code": "enforced_spend_limit_reached"}}})),
            429,
            "rate_limit_error",
        ),
    ];
    let mut script = Script::new();
    for (agent, fault, _, _) in &cases {
        script = script.rule(Rule::new(*agent).agent(*agent).fault(fault.clone()));
    }
    let server = serve(script).await;
    let client = scripted(&server, |_| {});
    for (agent, _, status, kind) in &cases {
        let mut req = request("hi");
        req.agent = Some(agent.to_string());
        let out = complete(client.as_ref(), &req).await;
        match out.err() {
            LlmError::Api {
                status: s,
                kind: k,
                request_id,
                ..
            } => {
                assert_eq!((s, k.as_str()), (status, *kind), "{agent}");
                assert!(request_id.is_some());
            }
            other => panic!("{agent}: {other:?}"),
        }
        assert!(out.retries().is_empty(), "{agent}");
        let n = server
            .requests()
            .iter()
            .filter(|r| r.agent() == Some(agent))
            .count();
        assert_eq!(n, 1, "{agent} was requested {n} times");
    }
}

#[tokio::test]
async fn e13_error_event_after_200_discards_the_partial_message_and_retries() {
    let server = serve(
        Script::new()
            .rule(
                Rule::new("overloaded mid-stream")
                    .times(1)
                    .fault(Fault::error_event(5, "overloaded_error")),
            )
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    let r = out.ok();
    assert_eq!(server.requests().len(), 2);
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].2.contains("overloaded_error"),
        "{}",
        retries[0].2
    );
    // Partial deltas were shown before the retry, but the response holds only the
    // complete second attempt.
    let retry_at = out
        .events
        .iter()
        .position(|(_, e)| matches!(e, StreamEvent::Retry { .. }))
        .unwrap();
    assert!(
        out.events[..retry_at]
            .iter()
            .any(|(_, e)| matches!(e, StreamEvent::TextDelta(_)))
    );
    assert_eq!(text_of(r), "I will read the file now, then report back.");
    assert_eq!(tool_uses(r).len(), 1);
}

#[tokio::test]
async fn e14_connection_reset_mid_stream_is_retried_without_duplicates() {
    let server = serve(
        Script::new()
            .rule(Rule::new("reset").times(1).fault(Fault::drop_after(10)))
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    let r = out.ok();
    assert_eq!(server.requests().len(), 2);
    let retries = out.retries();
    assert_eq!(retries.len(), 1);
    assert!(retries[0].2.contains("broke off"), "{}", retries[0].2);
    // The first attempt got as far as starting the tool call.
    let starts = out
        .events
        .iter()
        .filter(|(_, e)| matches!(e, StreamEvent::ToolUseStart { .. }))
        .count();
    assert_eq!(starts, 2);
    assert_eq!(
        tool_uses(r)
            .into_iter()
            .map(|(_, n, i)| (n, i))
            .collect::<Vec<_>>(),
        vec![(
            "Read".to_string(),
            json!({"path": "src/lib.rs", "limit": 200})
        )]
    );
}

#[tokio::test]
async fn e15_a_stall_is_cut_at_the_idle_timeout() {
    let server = serve(
        Script::new()
            .rule(Rule::new("stall").fault(Fault::stall(4, 60_000)))
            .default_reply(reply_with_a_tool()),
    )
    .await;
    let idle = Duration::from_millis(300);
    let client = scripted(&server, |c| {
        c.idle_timeout = idle;
        c.max_retries = 0;
    });
    let out = complete(client.as_ref(), &request("go")).await;
    let done = Instant::now();
    assert_eq!(out.err(), &LlmError::IdleTimeout(idle));
    // Frame 4 is the first text delta: the last thing that arrived before the silence.
    let (last, _) = out.events.last().expect("a delta arrived before the stall");
    let silent = done - *last;
    assert!(
        silent >= idle && silent <= idle + Duration::from_millis(200),
        "aborted {silent:?} after the last data"
    );
}

#[tokio::test]
async fn e15_pings_keep_a_slow_stream_alive() {
    let server = serve(
        Script::new()
            .rule(Rule::new("slow start").fault(Fault::pings(100, 2000)))
            .default_reply(Reply::text("worth the wait")),
    )
    .await;
    let client = scripted(&server, |c| {
        c.idle_timeout = Duration::from_millis(300);
        c.max_retries = 0;
    });
    let start = Instant::now();
    let out = complete(client.as_ref(), &request("go")).await;
    assert_eq!(text_of(out.ok()), "worth the wait");
    assert!(start.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn e16_invalid_json_in_data_is_an_error_and_not_retried() {
    let body = frame(message_start(), "\n") + "event: content_block_start\ndata: {not json\n\n";
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(body)))).await;
    let out = complete(scripted(&server, |_| {}).as_ref(), &request("go")).await;
    match out.err() {
        LlmError::Stream(m) => assert!(m.contains("invalid JSON"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn e16_eof_without_message_stop_is_incomplete() {
    let events = [
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "and then"})),
        block_stop(0),
        message_delta("end_turn", 3),
    ];
    // The last event also lacks its blank line, so it is never dispatched.
    let body = sse(&events) + "event: message_stop\ndata: {\"type\": \"message_stop\"}\n";
    let server = serve(Script::new().default_reply(Reply::raw(Raw::new(body)))).await;
    let out = complete(
        scripted(&server, |c| c.max_retries = 1).as_ref(),
        &request("go"),
    )
    .await;
    assert_eq!(
        out.err(),
        &LlmError::Stream("the stream ended before message_stop".into())
    );
    // A truncated stream is a transfer failure, so it was retried once.
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn e17_cancellation_aborts_a_long_stream_promptly() {
    let server = serve(
        Script::new()
            .rule(Rule::new("sixty seconds").fault(Fault::stall(3, 60_000)))
            .default_reply(Reply::text("never")),
    )
    .await;
    let client = scripted(&server, |_| {});
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let start = Instant::now();
    let out = complete_with(client.as_ref(), &request("go"), &cancel).await;
    assert_eq!(out.err(), &LlmError::Cancelled);
    // Not a speed check: half the stall proves the call did not wait it out.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}
