//! `swarm model-server`: the scripted model server as a process of its own, for demos and
//! for tests that drive separate `swarm` processes.
//!
//! The first line of stdout is the URL, flushed before anything else happens, so a parent
//! can read it and go; logs go to stderr. Signal handlers are in place before the URL is
//! printed, so a parent may stop the server as soon as it has read it.

use std::io::Write;
use std::net::SocketAddr;

use std::path::PathBuf;

use clap::Args;
use tokio::signal::unix::{SignalKind, signal};

use crate::ui::cli::input::{Limit, Source, read_text};
use swarm::error::{Error, Result};
use swarm_model_server::{ModelServer, Script};
use swarm_util::error::Base as _;

#[derive(Debug, Args)]
pub struct ModelServerArgs {
    /// The script: JSON rules saying what to answer (its format: see `swarm model-server --help`)
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// Where to listen: a loopback address and port; port 0 picks a free one
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Append one JSON line per request (time, agent, the rule that answered, body size, latest user text) to this file
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Append one JSON line per request (time, agent, path, the whole request body) to this file
    #[arg(long, value_name = "FILE")]
    pub log_requests: Option<PathBuf>,
}

/// The script format, for `swarm model-server --help` (the full reference is the doc
/// comment of `swarm_model_server::script`, which this follows).
pub const SCRIPT_FORMAT: &str = r#"Script format:
  A JSON object ('//' line comments allowed): a list of rules, tried in order, and an
  optional default reply. Unknown keys are refused.

  {
    "rules": [
      {
        "name": "lead approves plans",
        "agent": "team-lead",
        "user_regex": "requestId":"(?P<rid>[^"]+)",
        "times": 1,
        "reply": {
          "text": "I'll approve {{rid}}.",
          "tool_calls": [{"name": "SendMessage", "input": {"to": "bob", "request_id": "{{rid}}"}}]
        }
      },
      {"name": "busy once", "times": 1, "fault": {"status": 529, "retry_after": "1"}},
      {"name": "overloaded now and then", "chance": 0.01, "burst_ms": 2000,
       "fault": {"status": 529, "retry_after": "1"}}
    ],
    "default": {"text": "Nothing to do."},
    "seed": 7
  }

  Conditions (all optional; all must hold):
    agent                 the agent asking (the x-swarm-agent header), e.g. team-lead, bob
    system_contains       a substring of the system prompt
    user_contains         a substring of the latest user turn (its text and tool results)
    user_regex            a regular expression searched there; named groups become {{name}}
    tool_result_contains  a substring of the latest user turn's tool results only
    no_tool_result        true: a fresh turn; false: an answer to a tool call

  A rule fires when its conditions hold and its "times" (default unlimited) is not used
  up; the first such rule answers. With none, "default" answers; without a default the
  server answers HTTP 500 naming the agent and text.

  "chance" (0 to 1, default 1): a rule whose conditions hold fires only with that
  probability, drawn per request; else the next rules are tried. "burst_ms": once fired,
  the rule fires for every request it matches for that many ms more, with no draw (a
  small chance and a fault make occasional bursts of errors). "seed" (top level) fixes
  the random draws; default: a random seed.

  Reply: "text", "tool_calls" ([{"name", "input", "id"?}]), "thinking" ({"thinking",
  "signature"}), "stop_reason" (default tool_use with tool calls, else end_turn),
  "usage" ({"input_tokens", "output_tokens"}; default: estimated from sizes), or "raw"
  ({"body", "status", "content_type", "chunk_bytes", "chunk_delay_ms", "seed", "end":
  "close"|"hang"|"reset"}) for an exact response body. {{agent}} and the user_regex
  groups are replaced in every string of the reply.

  Fault (instead of a reply; exactly one kind):
    {"status": 529, "retry_after": "1", "headers": {..}, "body": {..}}  an HTTP error
    {"error_event_after_frames": 5, "error_type": "..", "error_message": ".."}
    {"stall_after_frames": 3, "stall_ms": 60000}    silence mid-stream, then the rest
    {"drop_after_frames": 10}                       the connection reset mid-stream
    {"pings_every_ms": 100, "ping_for_ms": 2000}    only pings for a while, then the reply
  "delay_ms" on a rule waits before answering at all: a number of ms, or [min, max] for
  a delay drawn anew for each request.

  The demo's script, crates/demo/src/script.json, is a full example."#;

pub fn run(args: ModelServerArgs) -> Result<()> {
    let text = read_text(
        Source::File(&args.script),
        Limit {
            what: "the script",
            bytes: 16 << 20,
            fix: "a script is a few rules; shorten it",
        },
    )?;
    let script = Script::from_json(&text)
        .map_err(|e| Error::usage(format!("invalid script {}: {e}", args.script.display())))?;
    let addr: SocketAddr = args.listen.parse().map_err(|_| {
        Error::usage(format!(
            "invalid --listen {:?}: expected a loopback address and port, such as 127.0.0.1:0",
            args.listen
        ))
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(async {
        let listen = |kind: SignalKind| {
            signal(kind)
                .map_err(|e| Error::Runtime(format!("failed to install a signal handler: {e}")))
        };
        let (mut int, mut term, mut hup) = (
            listen(SignalKind::interrupt())?,
            listen(SignalKind::terminate())?,
            listen(SignalKind::hangup())?,
        );
        let server = ModelServer::start(script, addr).await?;
        // Nobody reads them here (the logs are the record), and a soak sends it for hours.
        server.forget_requests();
        if let Some(log) = &args.log {
            server.log_requests(log)?;
        }
        if let Some(log) = &args.log_requests {
            server.log_request_bodies(log)?;
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.url())
            .and_then(|()| out.flush())
            .map_err(|e| Error::Runtime(format!("failed to print the server URL: {e}")))?;
        drop(out);
        tracing::info!("model server listening at {}", server.url());
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        server.shutdown().await;
        Ok(())
    })
}
