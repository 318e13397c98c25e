//! First-run dialogs that stop a Claude Code teammate before it reads its inbox: the
//! onboarding check, folder trust (a fresh worktree is a new folder to it), approval of an
//! API key from the environment, and the bypass-permissions disclaimer. Each waits for a
//! key press in the pane, so the teammate never registers and nobody hears why.
//!
//! Recognised by the text the 2.1.328 client shows (`claude-code-live.md` §3); each comes
//! with the `.claude.json` / `settings.json` entry (in `$CLAUDE_CONFIG_DIR`, by default
//! `~/.claude`) that keeps it from showing, or the answer a person gives in the pane
//! (`swarm attach`). swarm never edits those files itself.

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

/// How long a Claude Code teammate may take to start its first turn before its pane is
/// read for a dialog: it takes well under a second when nothing stops it.
pub const BOUND_MS: i64 = 5_000;

/// The dialog a pane's visible text shows, if any.
pub fn recognise(screen: &str) -> Option<Dialog> {
    // The TUI may wrap or pad lines: compare with whitespace collapsed.
    let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    DIALOGS.iter().copied().find(|d| flat.contains(d.needle))
}

impl Dialog {
    /// One line for `swarm status` and the lead.
    pub fn describe(&self) -> String {
        format!("blocked by the {} dialog: {}", self.name, self.fix)
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
    }
}
