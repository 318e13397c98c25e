//! What this crate knows about models besides their price: the size of each one's context
//! window, so the agent loop knows when to compact a conversation.
//!
//! Matched by prefix on the lowercased id; an unknown model gets [`DEFAULT_CONTEXT_WINDOW`],
//! the smallest window of the models swarm is used with, so compaction comes early
//! rather than never. `--context-window N` overrides the table.

/// The window assumed for a model the table does not know.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// (id prefix, window in tokens), the first matching prefix wins.
const WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("scripted", 200_000),
];

/// The model's context window in tokens.
pub fn context_window(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    // Provider-qualified ids (`anthropic/claude-…`, `us.anthropic.claude-…`) name the model last.
    let id = m.rsplit(['/', '.']).find(|p| !p.is_empty()).unwrap_or(&m);
    WINDOWS
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix) || id.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_and_the_default() {
        assert_eq!(context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(context_window("gpt-4.1-mini"), 1_047_576);
        assert_eq!(context_window("gpt-4o-2024-08-06"), 128_000);
        assert_eq!(context_window("scripted"), 200_000);
        assert_eq!(context_window("anthropic/claude-opus-4"), 200_000);
        assert_eq!(context_window("some-local-model"), DEFAULT_CONTEXT_WINDOW);
    }
}
