//! How each agent's pane was started, `teams/<team>/launch/<agent>.json` (swarm's own
//! file): the argv, the environment that is not secret, the names of the secret variables
//! (never their values), the working directory, and what runs it. `swarm resume` starts a
//! team's lead, and the resumed lead its teammates, again from these records, filling the
//! secrets in from its own environment.
//!
//! Written whole and atomically by whoever started the pane; read by whoever restarts it.
//! A record is run by the lead's machine, and on PostgreSQL any host's role can write the
//! row, so the lead signs it (`sig`, with the team's lead key, over [`signed_bytes`]) and
//! a restart runs only a record whose signature holds (`team::life::resume`).

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
    /// The lead's signature over [`signed_bytes`] (base64url Ed25519), made by the
    /// process that wrote the record when it signs for the lead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// What the lead signs for `agent`'s record in `team`: the compact JSON array
/// `["swarm-launch-record-v1", team, agent, argv, env, secret_names, cwd, engine, host]`.
pub fn signed_bytes(team: &TeamName, agent: &str, record: &LaunchRecord) -> Vec<u8> {
    serde_json::json!([
        "swarm-launch-record-v1",
        team.as_str(),
        agent,
        record.argv,
        record.env,
        record.secret_names,
        record.cwd,
        record.engine,
        record.host,
    ])
    .to_string()
    .into_bytes()
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
