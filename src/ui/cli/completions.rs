//! The command line as a whole, for what is generated from it: `swarm completions SHELL`
//! (a completion script, by clap_complete) and `swarm man` (the manual page, by
//! clap_mangen), both on stdout, from the command line `dispatch` hands over (its tests, which
//! hold every argument to saying what it is for, are beside `Cli` in `command`).

use std::io::Write;

use clap::Args;
use clap_complete::Shell;

use swarm::error::{Error, Result};
use swarm_util::error::Base as _;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: Shell,
}

/// The completion script of `cli` (swarm's whole command line) for `args.shell`.
pub fn completions(mut cli: clap::Command, args: CompletionsArgs) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "swarm", &mut out);
    write_out(&out)
}

/// One page of `cli`: the synopsis, every global option, and each command with what it
/// does.
pub fn manual(cli: clap::Command) -> Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cli)
        .render(&mut out)
        .map_err(|e| Error::io("render", "the manual page", e))?;
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        // `swarm man | head` closes the pipe early: nothing is wrong.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::io("write", "stdout", e))
        }
        _ => Ok(()),
    }
}
