//! The command line as a whole, for what is generated from it: `swarm completions SHELL`
//! (a completion script, by clap_complete) and `swarm man` (the manual page, by
//! clap_mangen), both on stdout. Its tests hold every argument to saying what it is for.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::ui::cli::args::Cli;
use swarm_util::error::{Error, Result};

pub fn completions(shell: Shell) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "swarm", &mut out);
    write_out(&out)
}

/// One page: the synopsis, every global option, and each command with what it does.
pub fn manual() -> Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::ui::cli::args::Cli;

    /// Every argument of every command, positional or flag, says what it is for in
    /// `--help` (but help and version, which clap describes).
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if help.trim().is_empty() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "swarm", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
