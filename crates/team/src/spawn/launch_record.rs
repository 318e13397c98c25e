//! A pane's launch record: how its command was started, kept so `swarm resume` can start
//! it again (see [`crate::life::resume`]). The record keeps the argv without `--resume`, the
//! environment, the working directory and the engine, and the names of its secrets only:
//! a secret's value never reaches the store, and comes back from the environment of the
//! process that restarts the pane.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::spawn::inherit::{Engine, TeammateCommand};
use swarm_store::Store;
use swarm_store::launch_record::{self, LaunchRecord};
use swarm_store::mailbox::lead_key;

/// The flag a resumed `swarm lead` or `swarm teammate` is started with.
pub const RESUME_FLAG: &str = "--resume";

/// Keeps how `agent`'s pane was started (its secrets by name only).
pub fn save_launch(
    store: &Store,
    agent: &str,
    cmd: &TeammateCommand,
    engine: Engine,
) -> Result<()> {
    save_launch_on(store, agent, cmd, engine, None)
}

/// [`save_launch`] for a pane on the host `host` names (its command is the host's).
pub fn save_launch_on(
    store: &Store,
    agent: &str,
    cmd: &TeammateCommand,
    engine: Engine,
    host: Option<&str>,
) -> Result<()> {
    let mut record = LaunchRecord {
        argv: cmd
            .argv
            .iter()
            .filter(|a| *a != RESUME_FLAG)
            .cloned()
            .collect(),
        env: cmd.env.clone(),
        secret_names: cmd.secret_env.iter().map(|(k, _)| k.clone()).collect(),
        cwd: cmd.cwd.clone(),
        engine: Some(engine.to_string()),
        host: host.map(str::to_owned),
        sig: None,
    };
    if let Some(signer) = lead_key::signer(store.root(), store.team())? {
        let bytes = launch_record::signed_bytes(store.team(), agent, &record);
        record.sig = Some(signer.sign_bytes(&bytes));
    }
    Ok(store.launches().save_launch(agent, &record)?)
}

/// `agent`'s record, if the lead wrote it: with the team's lead key here, only a record
/// whose signature holds is returned, so a restart never runs what someone else (a host's
/// role in the team's database, a hand edit) wrote. A team with no key here (its records
/// made before keys) is read as it is.
pub fn read_signed(store: &Store, agent: &str) -> Result<Option<LaunchRecord>> {
    let Some(record) = store.launches().read_launch(agent)? else {
        return Ok(None);
    };
    let Some(key) = lead_key::verify_key(store.root(), store.team())? else {
        return Ok(Some(record));
    };
    let bytes = launch_record::signed_bytes(store.team(), agent, &record);
    match &record.sig {
        Some(sig) if key.verifies(&bytes, sig) => Ok(Some(record)),
        _ => Err(Error::Unsigned(format!(
            "failed to restart {agent}: its launch record in team '{}' is not signed by the team's lead key, so it was not written by the lead and is not run; start {agent} again with `swarm spawn`",
            store.team()
        ))),
    }
}

/// The command a record describes, its secrets taken from `env` (the restarting
/// process's environment); a secret that is not there any more is left out.
pub(crate) fn command_from(
    record: LaunchRecord,
    env: &BTreeMap<String, String>,
) -> TeammateCommand {
    let secret_env = record
        .secret_names
        .iter()
        .filter_map(|k| env.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    TeammateCommand {
        argv: record.argv,
        env: record.env,
        secret_env,
        cwd: record.cwd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_store::Root;
    use swarm_util::names::TeamName;

    #[test]
    fn a_launch_record_keeps_secret_names_only_and_refills_them_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let team = TeamName::new("t").unwrap();
        let store = swarm_store::Teams::new(root.clone()).open(&team).unwrap();
        let cmd = TeammateCommand {
            argv: vec!["swarm".into(), "teammate".into(), RESUME_FLAG.into()],
            env: vec![("PATH".into(), "/bin".into())],
            secret_env: vec![("ANTHROPIC_API_KEY".into(), "sk-old".into())],
            cwd: dir.path().to_path_buf(),
        };
        save_launch(&store, "bob", &cmd, Engine::Swarm).unwrap();
        let text = std::fs::read_to_string(root.launch_record_path(&team, "bob")).unwrap();
        assert!(!text.contains("sk-old"), "{text}");
        let record = store.launches().read_launch("bob").unwrap().unwrap();
        assert_eq!(record.argv, ["swarm", "teammate"]);
        let env = BTreeMap::from([("ANTHROPIC_API_KEY".to_owned(), "sk-new".to_owned())]);
        let again = command_from(record, &env);
        assert_eq!(
            again.secret_env,
            [("ANTHROPIC_API_KEY".to_owned(), "sk-new".to_owned())]
        );
        assert_eq!(again.env, cmd.env);
        assert!(store.launches().read_launch("carol").unwrap().is_none());
    }
}
