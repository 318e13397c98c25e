//! What every command needs: the resolved root, the team, and the output mode.

use crate::store::layout::Root;
use crate::store::names::TeamName;
use crate::store::roster;
use crate::ui::cli::args::GlobalOpts;
use crate::util::error::{Error, Result};

pub struct Ctx {
    pub root: Root,
    pub global: GlobalOpts,
}

impl Ctx {
    pub fn new(global: GlobalOpts) -> Result<Ctx> {
        Ok(Ctx {
            root: Root::resolve(global.root.as_deref())?,
            global,
        })
    }

    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The team named on the command line, else `--team`/`SWARM_TEAM`, else the only team.
    pub fn team_or(&self, explicit: Option<&str>) -> Result<TeamName> {
        if let Some(t) = explicit.or(self.global.team.as_deref()) {
            return TeamName::new(t);
        }
        let teams = roster::list(&self.root)?;
        match teams.as_slice() {
            [only] => TeamName::new(&only.name),
            [] => Err(Error::not_found(format!(
                "no team exists under {}; create one with `swarm team create NAME`",
                self.root.path().display()
            ))),
            many => Err(Error::usage(format!(
                "several teams exist ({}); pick one with --team NAME or SWARM_TEAM",
                many.iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    pub fn team(&self) -> Result<TeamName> {
        self.team_or(None)
    }
}

/// A working directory given on the command line (else the current one), absolute and
/// with symlinks resolved; an error naming it if it does not exist.
pub fn working_dir(given: Option<&std::path::Path>) -> Result<std::path::PathBuf> {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Error::io("read", ".", e))?,
    };
    dir.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::not_found(format!(
            "working directory {} does not exist; create it or give another --cwd",
            dir.display()
        )),
        _ => Error::io("open working directory", &dir, e),
    })
}
