//! `swarm approvals`, `swarm approve`, `swarm reject`: plan and permission requests, decided
//! by a person (recorded as `human`) or by the lead agent through its Bash tool (recorded
//! as `team-lead`); teammates may only look (see `identity`).

use clap::Args;

use crate::ui::cli::context::Ctx;
use crate::ui::cli::output::print_json;
use swarm::error::Result;
use swarm_config::permissions::PermissionMode;
use swarm_store::Store;
use swarm_store::approvals;
use swarm_team::{life::status, life::supervisor};
use swarm_util::clock;
use swarm_util::text::printable;

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Only requests still waiting for a decision
    #[arg(long)]
    pub pending: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The request's id, as `swarm approvals` lists it
    pub request_id: String,
    /// For a plan: the permission mode the teammate gets [default: the lead agent's, else default]
    #[arg(long, value_name = "MODE")]
    pub mode: Option<PermissionMode>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// The request's id, as `swarm approvals` lists it
    pub request_id: String,
    /// What to change (required for a plan)
    #[arg(long)]
    pub feedback: Option<String>,
}

/// Records what teammates asked the lead that nobody recorded yet (a Claude Code
/// teammate records nothing itself, and no `swarm lead` may be running to do it).
fn catch_up(ctx: &Ctx, store: &Store) {
    let seen = ctx
        .team_tmux(store)
        .and_then(|tmux| Ok(status::observe(store, Some(&tmux))?));
    let recorded = seen.and_then(|seen| Ok(supervisor::record_requests(store, &seen)?));
    if let Err(e) = recorded {
        tracing::warn!("failed to record the teammates' requests: {e}");
    }
}

pub fn list(ctx: &Ctx, args: ApprovalsArgs) -> Result<()> {
    let pending = args.pending;
    let store = ctx.team()?;
    catch_up(ctx, &store);
    let all: Vec<approvals::Approval> = store
        .approvals()
        .list()?
        .into_iter()
        .filter(|a| !pending || a.state == approvals::State::Pending)
        .collect();
    if ctx.json() {
        print_json(&all);
        return Ok(());
    }
    if all.is_empty() {
        println!("no {}requests", if pending { "pending " } else { "" });
    }
    let now = clock::now_ms();
    for a in &all {
        println!(
            "{:<9} {:<10} {:<12} {}  {}",
            a.state.as_str(),
            format!("{:?}", a.kind).to_lowercase(),
            a.agent,
            a.request_id,
            status::ago(a.created_ms, now)
        );
        println!("          {}", printable(&a.summary));
    }
    Ok(())
}

pub fn approve(ctx: &Ctx, args: ApproveArgs) -> Result<()> {
    decide(ctx, &args.request_id, true, None, args.mode)
}

pub fn reject(ctx: &Ctx, args: RejectArgs) -> Result<()> {
    decide(ctx, &args.request_id, false, args.feedback, None)
}

fn decide(
    ctx: &Ctx,
    id: &str,
    approve: bool,
    feedback: Option<String>,
    mode: Option<PermissionMode>,
) -> Result<()> {
    let store = ctx.team()?;
    catch_up(ctx, &store);
    let a = store.approvals().resolve(
        id,
        approvals::Decision {
            approve,
            feedback,
            mode: mode.map(|m| m.to_string()),
            by: ctx.actor.decider(),
            via: None,
        },
    )?;
    if ctx.json() {
        print_json(&a);
    } else {
        println!(
            "{} {}'s request {}",
            a.state.as_str(),
            a.agent,
            a.request_id
        );
    }
    Ok(())
}
