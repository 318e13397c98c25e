//! `swarm model-server`: the scripted model server as a process of its own, for demos and
//! for tests that drive separate `swarm` processes.
//!
//! The first line of stdout is the URL, flushed before anything else happens, so a parent
//! can read it and go; logs go to stderr. Signal handlers are in place before the URL is
//! printed, so a parent may stop the server as soon as it has read it.

use std::io::Write;
use std::net::SocketAddr;

use tokio::signal::unix::{SignalKind, signal};

use crate::llm::model_server::{ModelServer, Script};
use crate::ui::cli::args::ModelServerArgs;
use crate::ui::cli::input::{Limit, Source, read_text};
use crate::util::error::{Error, Result};

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
        .map_err(|e| Error::Other(format!("failed to start the async runtime: {e}")))?;
    runtime.block_on(async {
        let listen = |kind: SignalKind| {
            signal(kind)
                .map_err(|e| Error::Other(format!("failed to install a signal handler: {e}")))
        };
        let (mut int, mut term, mut hup) = (
            listen(SignalKind::interrupt())?,
            listen(SignalKind::terminate())?,
            listen(SignalKind::hangup())?,
        );
        let server = ModelServer::start(script, addr).await?;
        if let Some(log) = &args.log {
            server.log_requests(log)?;
        }
        if let Some(log) = &args.log_requests {
            server.log_request_bodies(log)?;
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.url())
            .and_then(|()| out.flush())
            .map_err(|e| Error::Other(format!("failed to print the server URL: {e}")))?;
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
