//! How a lead agent's run ends when there is no team to wait for: a lead whose model ends
//! its turn with no task and no teammate ends the run at once, with its words as the result.

use std::process::Stdio;
use std::time::Duration;

use swarm_model_server::{Reply, Script};

use crate::harness::{Backend, Guarded, ScriptedModel, TestEnv, on_every_backend};

/// Runs `swarm run` on a lead that answers every request with `answer`; returns the exit
/// code, stdout, stderr and how many requests the model got.
fn run_lead_answering(backend: Backend, answer: &str) -> Option<(i32, String, String, usize)> {
    run_lead_with(backend, answer, None)
}

/// [`run_lead_answering`], with the lead meeting `fault` (`SWARM_FAULT`) if given.
fn run_lead_with(
    backend: Backend,
    answer: &str,
    fault: Option<&str>,
) -> Option<(i32, String, String, usize)> {
    let env = TestEnv::on(backend)?;
    let model = ScriptedModel::start(Script::new().default_reply(Reply::text(answer)));
    let (out, err) = (env.dir.path().join("out"), env.dir.path().join("err"));
    let mut cmd = env.swarm(&[
        "run",
        "what is in the readme?",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
        "--base-url",
    ]);
    if let Some(fault) = fault {
        cmd.env("SWARM_FAULT", fault);
    }
    cmd.arg(model.url())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null());
    // Far below the 60 s a stall nudge would take, let alone the four minutes of a stall.
    let status = Guarded(Some(cmd.spawn().unwrap()))
        .wait(Duration::from_secs(50))
        .expect("the run did not end at once");
    env.assert_on_its_backend("t");
    Some((
        status.code().unwrap_or(-1),
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
        model.requests().len(),
    ))
}

fn a_lead_that_answers_without_a_team_ends_the_run_done(backend: Backend) {
    let Some((code, out, err, requests)) =
        run_lead_answering(backend, "DONE: the readme has one line, \"hello\".")
    else {
        return;
    };
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("done: the readme has one line"),
        "the report lacks the lead's answer:\n{out}"
    );
    assert_eq!(requests, 1, "the lead was asked again: {out}");
}

fn a_lead_that_gives_up_without_a_team_fails_the_run_with_its_reason(backend: Backend) {
    let Some((code, out, err, _)) =
        run_lead_answering(backend, "I cannot read files outside the project.")
    else {
        return;
    };
    assert_eq!(code, 7, "{out}\n{err}");
    assert!(
        err.contains("without a task or a teammate: I cannot read files outside the project."),
        "stderr does not say why: {err}"
    );
}

fn a_lead_that_panics_records_its_end_and_the_run_says_why(backend: Backend) {
    let Some((code, out, err, requests)) =
        run_lead_with(backend, "DONE: never said", Some("lead.registered:panic"))
    else {
        return;
    };
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains("the lead panicked: fault point lead.registered"),
        "stderr does not say the lead panicked: {err}"
    );
    assert_eq!(requests, 0, "the lead went on after its panic: {out}");
}

fn a_lead_gone_without_an_end_fails_the_run_with_its_log_and_pane(backend: Backend) {
    let Some((code, out, err, _)) =
        run_lead_with(backend, "DONE: never said", Some("lead.registered:kill"))
    else {
        return;
    };
    assert_eq!(code, 7, "{out}\n{err}");
    assert!(err.contains("stopped without finishing"), "{err}");
    assert!(
        err.contains("its log ends:") && err.contains("registered (pid"),
        "stderr lacks the end of the lead's log: {err}"
    );
    assert!(
        err.contains("its pane shows:") && err.contains("signal 9"),
        "stderr lacks the lead's pane: {err}"
    );
}

on_every_backend!(
    a_lead_that_answers_without_a_team_ends_the_run_done,
    a_lead_that_gives_up_without_a_team_fails_the_run_with_its_reason,
    a_lead_that_panics_records_its_end_and_the_run_says_why,
    a_lead_gone_without_an_end_fails_the_run_with_its_log_and_pane,
);
