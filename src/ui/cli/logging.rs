//! Where this process's log goes: stderr, or a file (a teammate's or the lead's log),
//! filtered by `SWARM_LOG`; `watch` uses the same filter for the dashboard's log.

use swarm_util::vars;

/// Warnings go to stderr (or a teammate's log file); `SWARM_LOG` (an env-filter, e.g.
/// `swarm=debug`) says more.
pub fn init_logging(file: Option<std::fs::File>) {
    let filter = log_filter(if file.is_some() { "info" } else { "warn" });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let _ = match file {
        Some(f) => builder
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
            .try_init(),
        None => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .without_time()
            .try_init(),
    };
}

/// What to log: `SWARM_LOG` (an env-filter, e.g. `swarm=debug`), else `default`.
pub fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_env(vars::SWARM_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
}
