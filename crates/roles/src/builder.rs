//! How every agent is put together, whatever its role (the lead, a teammate, `swarm agent`):
//! its model client, its tool context, the engine with its limits, and in a team the rest:
//! the client at the team's rate-limit gate and within its budget, the hooks and the team
//! tools, and the conversation restored from its transcript when it is resumed.
//!
//! It lives in `roles` because a team agent needs the team tools (`team`), which the agent
//! crate must not know; `swarm agent` runs without a team and reaches it through
//! [`crate::solo`], asking for nothing of a team ([`AgentBuilder::alone`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Result;
use swarm_agent::engine::Engine;
use swarm_agent::tools::ToolContext;
use swarm_agent::transcript::Transcript;
use swarm_config::hooks::{Hooks, Runner as HookRunner};
use swarm_config::permissions::{AllowRule, PermissionMode};
use swarm_config::tools::ToolName;
use swarm_llm::budget::BudgetedClient;
use swarm_llm::{self as llm, LlmConfig};
use swarm_store::Store;
use swarm_team::toolset::tools::TeamTools;
use swarm_util::meter::Limits;
use swarm_util::names::AgentName;

/// What any agent is made of.
pub struct AgentBuilder {
    pub name: AgentName,
    pub llm: LlmConfig,
    pub cwd: PathBuf,
    pub mode: PermissionMode,
    pub allow: Vec<AllowRule>,
    /// What the agent's commands get on top of this process's environment.
    pub env: BTreeMap<String, String>,
    pub system: String,
    /// The model's tools.
    pub tools: Vec<ToolName>,
    pub max_turns: u32,
    /// Where each model turn appends its timings, for `scripts/bench`.
    pub timings: Option<PathBuf>,
    /// `--context-window`: overrides the model's window from the table.
    pub context_window: Option<u64>,
}

/// What an agent has in a team.
pub struct Membership {
    pub store: Store,
    /// Its own limits; the team's apply too.
    pub budget: Limits,
    pub hooks: Hooks,
    /// Its type, as its hooks are told it.
    pub agent_type: String,
    /// Its team tools as its role has them (the lead's powers, a teammate's pane); the
    /// builder gives them the hooks.
    pub tools: TeamTools,
    /// Restarted after its team stopped: its conversation is restored from its transcript.
    pub resumed: bool,
}

/// An agent ready to run: the engine and the context its tools share.
pub struct Agent {
    pub engine: Engine,
    pub ctx: ToolContext,
}

/// What a team agent keeps besides: its budgeted client, its hooks, its team tools, and
/// whether its conversation was restored.
pub struct InTeam {
    pub budget: Arc<BudgetedClient>,
    pub hooks: Arc<HookRunner>,
    pub tools: Arc<TeamTools>,
    pub restored: bool,
}

impl AgentBuilder {
    /// An agent on its own: the rate-limit gate of this process, no budget, no team tools,
    /// no transcript.
    pub fn alone(self) -> Result<Agent> {
        let client = self.client(None)?;
        Ok(self.assemble(client))
    }

    /// An agent of `team`'s: at the team's rate-limit gate, within its budget and the
    /// team's, with its hooks and team tools, its conversation recorded in its transcript
    /// (and restored from it when resumed).
    pub fn in_team(self, team: Membership) -> Result<(Agent, InTeam)> {
        let store = team.store;
        // One 429 makes the whole team wait, together.
        let inner = self.client(Some(&store))?;
        let budget = Arc::new(BudgetedClient::new(
            inner,
            team.budget,
            store.budget().ledger(&self.name),
        ));
        let hooks = Arc::new(HookRunner {
            hooks: team.hooks,
            session_id: uuid::Uuid::new_v4().to_string(),
            cwd: self.cwd.clone(),
            team: store.team().to_string(),
            agent: self.name.to_string(),
            agent_type: Some(team.agent_type),
        });
        let mut tools = team.tools;
        tools.hooks = Some(hooks.clone());
        let tools = Arc::new(tools);
        let name = self.name.clone();
        let mut agent = self.assemble(budget.clone());
        agent.ctx.tool_set = Some(tools.clone());
        let path = store.root().transcript_path(store.team(), &name);
        let restored = team.resumed
            && crate::resume::restore_conversation(&store, &name, &path, &mut agent.engine)?;
        let mut transcript = Transcript::open(&path)?;
        if !restored {
            transcript.mark_fresh_start()?;
        }
        agent.engine.transcript = Some(transcript);
        let parts = InTeam {
            budget,
            hooks,
            tools,
            restored,
        };
        Ok((agent, parts))
    }

    /// The model client, at the team's rate-limit gate when in one.
    fn client(&self, team: Option<&Store>) -> Result<Arc<dyn llm::LlmClient>> {
        llm::install_crypto_provider();
        let mut config = self.llm.clone();
        config.rate_gate = team.map(|store| store.rate_gate());
        Ok(Arc::from(llm::build_client(&config)?))
    }

    fn assemble(self, client: Arc<dyn llm::LlmClient>) -> Agent {
        let mut ctx = ToolContext::new(self.cwd, self.name, self.mode);
        ctx.allow = self.allow;
        ctx.env = self.env;
        let mut engine = Engine::new(client, self.llm.model, self.system, self.tools);
        engine.max_turns = self.max_turns;
        engine.timings = self.timings;
        if let Some(n) = self.context_window {
            engine.context_window = n;
        }
        Agent { engine, ctx }
    }
}
