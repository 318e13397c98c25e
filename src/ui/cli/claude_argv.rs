//! Claude Code's teammate command line, read as `swarm teammate`'s: what makes swarm a
//! Claude Code lead's teammate through `CLAUDE_CODE_TEAMMATE_COMMAND`.
//!
//! Claude Code 2.1.328 runs that variable's value as one program (never split into words)
//! in a new pane, with its teammate argv and no subcommand: `--agent-id mate@session-…
//! --agent-name mate --team-name session-… --agent-color blue --parent-session-id <uuid>
//! --lead-verify-key <ms>.<key> --agent-type general-purpose --dangerously-skip-permissions
//! --model claude-sonnet-4-5` (values that start with `-` or look like URLs as
//! `--flag=value`). So `swarm` started with `--agent-id` first, or as `swarm cc-teammate
//! ARGS` (for wrapper scripts), reads ARGS as such a command line and becomes
//! `swarm teammate` with the same identity; nothing else of the teammate changes.
//!
//! What it translates: the identity flags, `--lead-verify-key` and `--plan-mode-required`
//! as they are; `--dangerously-skip-permissions` and a `--permission-mode` swarm knows into
//! swarm's permission mode; `--model` into `--claude-model`, which names the model only
//! when nothing of swarm's does, and `--agent-type` into `--claude-agent-type`, used when
//! the project defines that type (a plugin's type is not ours to load; see `agent`). Every other flag (Claude
//! Code adds settings, plugin, MCP and tool flags over time) is kept for the teammate's log
//! as `--claude-flag`, never refused: an unknown `--flag` takes the next word as its value
//! unless that word is a flag too.

use std::ffi::OsString;

use swarm_config::permissions::PermissionMode;

/// The explicit form: `swarm cc-teammate ARGS`.
pub const SUBCOMMAND: &str = "cc-teammate";

/// Claude Code flags that are swarm teammate flags too, with the same meaning.
const SAME: [&str; 6] = [
    "--agent-id",
    "--agent-name",
    "--team-name",
    "--agent-color",
    "--parent-session-id",
    "--lead-verify-key",
];

/// `argv` as swarm parses it: a Claude Code teammate command line becomes `swarm teammate`'s,
/// anything else is returned as it is.
pub fn rewrite(argv: Vec<OsString>) -> Vec<OsString> {
    let Some(first) = argv.get(1).map(|a| a.to_string_lossy().into_owned()) else {
        return argv;
    };
    let rest = if first == SUBCOMMAND {
        &argv[2..]
    } else if first == "--agent-id" || first.starts_with("--agent-id=") {
        &argv[1..]
    } else {
        return argv;
    };
    let words: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = vec![argv[0].clone(), OsString::from("teammate")];
    out.extend(translate(&words).into_iter().map(OsString::from));
    out
}

/// Claude Code's teammate flags as `swarm teammate` flags (see the module comment).
fn translate(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        let Some((flag, inline)) = split_flag(word) else {
            out.push(format!("--claude-flag={word}"));
            continue;
        };
        let takes_value = !matches!(
            flag,
            "--dangerously-skip-permissions" | "--plan-mode-required"
        );
        let value = match inline {
            Some(v) => Some(v.to_owned()),
            None if takes_value && words.get(i).is_some_and(|w| !w.starts_with("--")) => {
                i += 1;
                Some(words[i - 1].clone())
            }
            None => None,
        };
        out.push(match (flag, value) {
            (f, Some(v)) if SAME.contains(&f) => format!("{f}={v}"),
            ("--model", Some(m)) => format!("--claude-model={m}"),
            ("--agent-type", Some(t)) => format!("--claude-agent-type={t}"),
            ("--permission-mode", Some(m)) if m.parse::<PermissionMode>().is_ok() => {
                format!("--permission-mode={m}")
            }
            ("--dangerously-skip-permissions", _) => "--permission-mode=bypassPermissions".into(),
            ("--plan-mode-required", _) => "--plan-mode-required".into(),
            (f, Some(v)) => format!("--claude-flag={f}={v}"),
            (f, None) => format!("--claude-flag={f}"),
        });
    }
    out
}

/// `--flag` or `--flag=value`; `None` for a word that is no flag.
fn split_flag(word: &str) -> Option<(&str, Option<&str>)> {
    if !word.starts_with("--") || word.len() == 2 {
        return None;
    }
    Some(match word.split_once('=') {
        Some((f, v)) => (f, Some(v)),
        None => (word, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    fn strings(v: Vec<OsString>) -> Vec<String> {
        v.into_iter().map(|s| s.into_string().unwrap()).collect()
    }

    #[test]
    fn claude_codes_teammate_argv_becomes_swarm_teammate() {
        let argv = words(
            "/usr/bin/swarm --agent-id mate@session-6e67bf2c --agent-name mate \
             --team-name session-6e67bf2c --agent-color blue --parent-session-id 0b7c \
             --lead-verify-key 1700000000000.MCowBQ --agent-type general-purpose \
             --dangerously-skip-permissions --model claude-sonnet-4-5",
        );
        assert_eq!(
            strings(rewrite(argv)),
            [
                "/usr/bin/swarm",
                "teammate",
                "--agent-id=mate@session-6e67bf2c",
                "--agent-name=mate",
                "--team-name=session-6e67bf2c",
                "--agent-color=blue",
                "--parent-session-id=0b7c",
                "--lead-verify-key=1700000000000.MCowBQ",
                "--claude-agent-type=general-purpose",
                "--permission-mode=bypassPermissions",
                "--claude-model=claude-sonnet-4-5",
            ]
        );
    }

    #[test]
    fn unknown_flags_are_kept_never_fatal_and_the_explicit_form_works() {
        let argv = words(
            "swarm cc-teammate --agent-id=a@t --settings=/x.json --chrome --plan-mode-required \
             --plugin-dir /p --permission-mode auto --permission-mode acceptEdits stray --agent-name a",
        );
        assert_eq!(
            strings(rewrite(argv)),
            [
                "swarm",
                "teammate",
                "--agent-id=a@t",
                "--claude-flag=--settings=/x.json",
                "--claude-flag=--chrome",
                "--plan-mode-required",
                "--claude-flag=--plugin-dir=/p",
                "--claude-flag=--permission-mode=auto",
                "--permission-mode=acceptEdits",
                "--claude-flag=stray",
                "--agent-name=a",
            ]
        );
    }

    #[test]
    fn any_other_command_line_is_left_alone() {
        for line in [
            "swarm",
            "swarm status",
            "swarm --team t teammate --agent-id a@t",
        ] {
            assert_eq!(rewrite(words(line)), words(line));
        }
    }
}
