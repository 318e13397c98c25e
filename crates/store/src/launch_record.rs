//! How each agent's pane was started, `teams/<team>/launch/<agent>.json` (swarm's own
//! file): the argv, the environment that is not secret, the names of the secret variables
//! (never their values), the working directory, and what runs it. `swarm resume` starts a
//! team's lead, and the resumed lead its teammates, again from these records, filling the
//! secrets in from its own environment.
//!
//! Written whole and atomically by whoever started the pane; read by whoever restarts it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::files;
use crate::layout::Root;
use swarm_util::error::IoContext;
use swarm_util::json;
use swarm_util::names::TeamName;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchRecord {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Names only: their values are taken from the restarting process's environment.
    #[serde(default)]
    pub secret_names: Vec<String>,
    pub cwd: PathBuf,
    /// `swarm` or `claude` (see `team::inherit::Engine`).
    #[serde(default)]
    pub engine: Option<String>,
    /// The host it runs on when not the lead's (`swarm host add`): then argv, env and cwd
    /// are the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Writes `agent`'s record, replacing an older one.
pub(crate) fn save(root: &Root, team: &TeamName, agent: &str, record: &LaunchRecord) -> Result<()> {
    let dir = root.launch_dir(team);
    std::fs::create_dir_all(&dir).ctx("create directory", &dir)?;
    Ok(files::write(
        root,
        &root.launch_record_path(team, agent),
        &json::to_pretty(record),
    )?)
}

/// `agent`'s record; `None` when its pane was never started by swarm (or before records).
pub(crate) fn read(root: &Root, team: &TeamName, agent: &str) -> Result<Option<LaunchRecord>> {
    match files::read(root, &root.launch_record_path(team, agent))? {
        None => Ok(None),
        Some(bytes) => json::parse(&bytes).map(Some).map_err(|e| {
            swarm_util::error::Error::Corrupt {
                path: root.launch_record_path(team, agent),
                reason: format!("not a launch record ({e}); remove it and start the agent again"),
            }
            .into()
        }),
    }
}
