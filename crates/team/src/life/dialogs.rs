//! First-run dialogs that stop a Claude Code teammate, at its start or later in its run:
//! the onboarding check (offline, it fails and the client exits), folder trust (a fresh
//! worktree is a new folder to it), approval of an API key from the environment, and the
//! bypass-permissions disclaimer. Each waits for a key press in the pane, so the teammate
//! reads no mail and nobody hears why.
//!
//! Recognised by the text the 2.1.328 client shows (`docs/design/claude-code-client.md`
//! §2); each comes with the `.claude.json` / `settings.json` entry (in
//! `$CLAUDE_CONFIG_DIR`, by default `~/.claude`) that keeps it from showing, or the answer
//! a person gives in the pane (`swarm attach`). swarm never edits those files itself.

/// A dialog that blocks a teammate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialog {
    /// Short name, as `swarm status` shows it.
    pub name: &'static str,
    /// Text the client shows while it waits.
    needle: &'static str,
    /// What clears it, for a person.
    pub fix: &'static str,
}

const DIALOGS: &[Dialog] = &[
    Dialog {
        name: "onboarding",
        needle: "Unable to connect to Anthropic services",
        fix: "set \"hasCompletedOnboarding\": true in .claude.json",
    },
    Dialog {
        name: "folder trust",
        needle: "Quick safety check",
        fix: "answer it in the pane (`swarm attach`), or set \"projects\": {\"<real path of its cwd>\": {\"hasTrustDialogAccepted\": true}} in .claude.json",
    },
    Dialog {
        name: "API key approval",
        needle: "Detected a custom API key",
        fix: "answer it in the pane (`swarm attach`), or add the key's last 20 characters to \"customApiKeyResponses\": {\"approved\": [...]} in .claude.json",
    },
    Dialog {
        name: "bypass-permissions disclaimer",
        needle: "Bypass Permissions mode",
        fix: "answer it in the pane (`swarm attach`), or set \"skipDangerousModePermissionPrompt\": true in settings.json",
    },
];

/// How many of a screen's last non-empty lines a dialog is looked for in: a dialog waits at
/// the bottom of the screen, and the conversation above may quote any text.
const BOTTOM_LINES: usize = 15;

/// The dialog a pane's visible text shows at its bottom, if any.
pub fn recognise(screen: &str) -> Option<Dialog> {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let bottom = &lines[lines.len().saturating_sub(BOTTOM_LINES)..];
    // The TUI may wrap or pad lines: compare with whitespace collapsed.
    let flat = bottom
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    DIALOGS.iter().copied().find(|d| flat.contains(d.needle))
}

/// The last `n` non-empty lines of a screen, on one line: what a client that exited said.
pub fn last_lines(screen: &str, n: usize) -> Option<String> {
    // tmux's own line under a dead pane (`remain-on-exit`) is not the client's.
    let lines: Vec<&str> = screen
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Pane is dead"))
        .collect();
    let last = lines[lines.len().saturating_sub(n)..].join(" / ");
    (!last.is_empty()).then_some(last)
}

impl Dialog {
    /// One line for `swarm status` and the lead.
    pub fn describe(&self) -> String {
        format!("blocked by the {} dialog: {}", self.name, self.fix)
    }

    /// One line for a client that stopped at the dialog and exited.
    pub fn describe_exit(&self) -> String {
        format!("stopped at the {} dialog: {}", self.name, self.fix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_each_dialog_by_its_text() {
        let trust = "  Quick safety check: Is this a project you created\n  or one you trust?";
        assert_eq!(recognise(trust).unwrap().name, "folder trust");
        let key =
            "Detected a custom API key in your environment\n Do you want to use this API key?";
        assert_eq!(recognise(key).unwrap().name, "API key approval");
        let bypass = "WARNING: Claude Code running in Bypass\nPermissions mode";
        assert_eq!(
            recognise(bypass).unwrap().name,
            "bypass-permissions disclaimer"
        );
        assert_eq!(recognise("› Message from @team-lead"), None);
        // Quoted far above the bottom, in the conversation, it is no dialog.
        let quoted = format!(
            "Quick safety check\n{}",
            "⏺ more of the conversation\n".repeat(BOTTOM_LINES)
        );
        assert_eq!(recognise(&quoted), None);
        assert_eq!(last_lines("a\n\n  b \nc\n\n", 2).as_deref(), Some("b / c"));
    }
}
