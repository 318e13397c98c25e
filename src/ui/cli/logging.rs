//! Where this process's log goes: stderr, or a file (a teammate's or the lead's log),
//! filtered by `SWARM_LOG`; `watch` uses the same filter for the dashboard's log.

use swarm_util::environment::{Environment, is_secret};
use swarm_util::vars::{self, Travel};

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

/// One line naming what of the settings table reached this process through its
/// environment (a secret by name only): a pane's log says what it was given, which is how
/// a setting's journey is checked (`tests/integration/settings_matrix.rs`).
pub fn log_settings(env: &Environment) {
    let given: Vec<String> = vars::ALL
        .iter()
        .filter_map(|var| {
            let value = env.get(var.name)?;
            let secret =
                var.panes == Travel::Secret || var.hosts == Travel::Secret || is_secret(var.name);
            Some(match secret {
                true => format!("{}=<set>", var.name),
                false => format!("{}={value}", var.name),
            })
        })
        .collect();
    tracing::info!("settings from the environment: {}", given.join(" "));
}

/// What to log: `SWARM_LOG` (an env-filter, e.g. `swarm=debug`), else `default`.
pub fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_env(vars::SWARM_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
}
