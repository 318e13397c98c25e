//! What the lead agent is started with: its team, goal, approver, model, powers (the
//! launcher it spawns teammates with) and limits, resolved by `super::start`.

use std::time::Duration;

use swarm_config::permissions::Approver;
use swarm_llm::LlmConfig;
use swarm_store::Store;
use swarm_team::toolset::tools::LeadPowers;

pub use super::ending::Outcome;

#[derive(Debug, Clone)]
pub struct LeadAgentOptions {
    /// Its team, opened once where the process starts.
    pub store: Store,
    pub goal: String,
    pub approver: Approver,
    pub llm: LlmConfig,
    pub powers: LeadPowers,
    pub cwd: std::path::PathBuf,
    /// Resumed after the team stopped: its conversation is restored, and its first turn
    /// says so with the team's status instead of giving the goal again.
    pub resumed: bool,
    pub max_turns: u32,
    /// How long the team may sit still (nobody working, tasks open) before the lead is nudged.
    pub stall_after: Duration,
    /// Where each model turn appends its timings, for `scripts/bench`.
    pub timings: Option<std::path::PathBuf>,
    /// `--context-window`: overrides the model's window from the table.
    pub context_window: Option<u64>,
}
