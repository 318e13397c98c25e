//! `swarm run` and `swarm demo`: a goal, a lead agent in the team window, and (in `follow`) the wait
//! for its report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::ui::cli::context::{Ctx, lead_dir};
use crate::ui::cli::follow::{Speak, attaches, follow};
use crate::ui::cli::lead::inherited;
use crate::ui::cli::options::{
    BudgetOpts, EngineOpts, MergeOpts, ModelOpts, PermissionOpts, StoreOpts,
};
use crate::ui::cli::resume;
use crate::ui::cli::run_plan;
use swarm::error::{Error, Result};
use swarm_config::agents::Catalog;
use swarm_config::permissions::Approver;
use swarm_config::teams::{self, TeamDef};
use swarm_demo::run::{self as demo_run, Demo};
use swarm_llm::estimate_cost_usd;
use swarm_team::runs::progress::Event;
use swarm_team::runs::run::{self as team_run, Goal};
use swarm_team::spawn::launch::SpawnRequest;
use swarm_util::error::Base as _;
use swarm_util::meter::{Limits, Usage};
use swarm_util::names::TeamName;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What the team should achieve
    pub goal: String,
    /// The most teammates the team may have [default: 3; with --team-def, its member count]
    #[arg(long, value_name = "N")]
    pub teammates: Option<usize>,
    /// Place the lead's new teammates on these hosts (see `swarm host add`), each on the
    /// one with the fewest of the team's teammates; the team must be on PostgreSQL
    #[arg(long, value_name = "HOST,...", value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Start a defined team: .swarm/teams/NAME.toml in the project (or a path to a .toml
    /// file), its members running before the lead's first turn and the goal filled into
    /// its template; see `swarm team init` and `swarm team check`
    #[arg(long, value_name = "NAME|PATH")]
    pub team_def: Option<String>,
    /// Who approves plans and permissions: lead (its model) or human (swarm approve)
    #[arg(long, default_value = "lead", value_name = "WHO")]
    pub approver: Approver,
    /// Do not attach to the team window: wait for the end, telling progress on stderr, and
    /// print the report (as one JSON object with --json)
    #[arg(long)]
    pub no_attach: bool,
    /// Stream what happens as JSON lines on stdout (one object a line, with its "type" and
    /// "time"), ending with the report; implies --no-attach
    #[arg(long)]
    pub events: bool,
    /// Keep the team's tmux window when the run ends (its finished panes stay to look at)
    #[arg(long)]
    pub keep: bool,
    /// Where the team works [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print what the run would start, made nowhere: the lead's command, each member's, and
    /// a teammate's as the lead would start one (secrets by name only; JSON with --json)
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub model: ModelOpts,
    #[command(flatten)]
    pub permissions: PermissionOpts,
    #[command(flatten)]
    pub engine: EngineOpts,
    /// The whole team's budget
    #[command(flatten)]
    pub budget: BudgetOpts,
    /// How teammates' worktree branches land: the team's merge queue
    #[command(flatten)]
    pub merge: MergeOpts,
    #[command(flatten)]
    pub store: StoreOpts,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Do not attach: run to the end and exit 0 only if the job's check passes
    #[arg(long)]
    pub no_attach: bool,
    /// How many teammates (1-3)
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub teammates: usize,
    /// Where to make the scratch repository [default: a new directory under the system temp dir]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the team's files afterwards (they are deleted by default)
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub store: StoreOpts,
    /// The job: toolkit (the shared checkout, a plan approval) or worktrees (a worktree per teammate, landed by the merge queue with a check)
    #[arg(long, default_value = "toolkit", value_name = "JOB")]
    pub job: swarm_demo::job::Job,
}

pub fn run(ctx: &Ctx, mut args: RunArgs) -> Result<u8> {
    if args.goal.trim().is_empty() {
        return Err(Error::usage(
            "give the team a goal: swarm run \"what to build\"",
        ));
    }
    // Where the team is made, checked before anything is.
    let teams = args.store.teams(&ctx.teams)?;
    let here = ctx.working_dir(args.cwd.as_deref())?;
    let def = match args.team_def.clone() {
        Some(given) => Some(team_def(ctx, &given, &here, &mut args)?),
        None => None,
    };
    let members = def
        .as_ref()
        .map(|d| spawn_requests(d, &here))
        .unwrap_or_default();
    let teammates = args
        .teammates
        .unwrap_or(if def.is_some() { members.len() } else { 3 });
    if teammates == 0 {
        return Err(Error::usage("--teammates must be at least 1"));
    }
    if teammates < members.len() {
        return Err(Error::usage(format!(
            "--teammates {teammates} is fewer than the team definition's {} members; raise it or leave it out",
            members.len()
        )));
    }
    // Fail here, not in the pane: a missing key or a bad provider is the person's to fix.
    let llm = ctx.llm_config(&args.model)?;
    let budget = args.budget.limits();
    warn_unpriced(&budget, &llm.model);
    if !args.dry_run
        && let Some(code) = resume::offer(ctx, &here)?
    {
        return Ok(code);
    }
    let team = match (&ctx.global.team, &def) {
        (Some(n), _) => TeamName::new(n)?,
        (None, Some(d)) => team_run::team_from_goal(&def_name(d))?,
        (None, None) => team_run::team_from_goal(&args.goal)?,
    };
    let goal_text = def
        .as_ref()
        .map_or_else(|| args.goal.clone(), |d| d.goal(&args.goal));
    let lead = ctx.with_engine(
        inherited(ctx, &args.model, &args.permissions)?,
        &args.engine,
    )?;
    check_hosts(ctx, &teams, &args.hosts)?;
    let goal = Goal {
        text: &goal_text,
        approver: args.approver,
        teammates,
        budget,
        merge: args.merge.options(false, &ctx.profile.settings.dirs),
        members: &members,
        hosts: &args.hosts,
    };
    if args.dry_run {
        return run_plan::show(ctx, lead, &team, &here, &goal);
    }
    // The team is made, then opened once: everything below gets this handle.
    let store = team_run::make_team(&teams, &team, &here, &goal, lead.permission_mode)?;
    let launcher = ctx.launcher(&store, lead, here)?;
    let window = team_run::launch(&launcher, &goal)?;
    let speak = if args.events {
        Speak::Events
    } else if ctx.json() {
        Speak::Json
    } else {
        Speak::Text
    };
    // Machine output is for scripts: nothing to attach to.
    let no_attach = args.no_attach || speak != Speak::Text;
    let started = Event::Started {
        team: team.to_string(),
    };
    if attaches(no_attach) {
        println!("{}", started.line());
    } else {
        speak.tell(&started);
    }
    follow(ctx, &store, &window, no_attach, speak)
        .inspect(|_| swarm_team::life::teardown::close_finished(&store, &window, args.keep))
}

/// `--team-def`: the definition, checked (its agent types too, from where the team
/// works); its lead's model settings fill in what the command line left out.
fn team_def(ctx: &Ctx, given: &str, here: &Path, args: &mut RunArgs) -> Result<TeamDef> {
    let path = teams::locate(given, &ctx.profile.settings.dirs.project_dir(here))?;
    let def = teams::load(&path)?;
    def.check_agent_types(&Catalog::load(here, &ctx.profile.settings.dirs))?;
    let api = &mut args.model.api;
    api.provider = api.provider.or(def.lead.provider);
    api.base_url = api.base_url.take().or_else(|| def.lead.base_url.clone());
    args.model.model = args.model.model.take().or_else(|| def.lead.model.clone());
    Ok(def)
}

/// A definition's name: its file's, for the team's name.
fn def_name(def: &TeamDef) -> String {
    def.path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What `swarm spawn` would be given for each member, working in `cwd`.
pub fn spawn_requests(def: &TeamDef, cwd: &Path) -> Vec<SpawnRequest> {
    def.members
        .iter()
        .map(|m| SpawnRequest {
            prompt: m.prompt.clone(),
            agent_type: m.agent_type.clone(),
            model: m.model.clone(),
            provider: m.provider,
            base_url: m.base_url.clone(),
            permission_mode: m.permission_mode,
            plan_mode_required: m.plan_mode,
            color: m.color.clone(),
            isolation: m.isolation,
            ..SpawnRequest::plain(m.name.clone(), cwd.to_path_buf())
        })
        .collect()
}

/// Says once, before anything starts, that a dollar budget cannot see `model`'s tokens.
pub fn warn_unpriced(budget: &Limits, model: &str) {
    if budget.usd.is_some() && estimate_cost_usd(model, &Usage::default()).is_none() {
        eprintln!(
            "swarm: warning: no price is known for model {model}: --budget-usd does not count its tokens{}",
            if budget.tokens.is_some() {
                "; --budget-tokens still limits them"
            } else {
                "; give --budget-tokens to limit them"
            }
        );
    }
}

/// `--hosts`: each one recorded, and the team made on a database they can reach.
fn check_hosts(ctx: &Ctx, teams: &swarm_store::Teams, hosts: &[String]) -> Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    if teams.new_teams_at().is_none() {
        return Err(Error::usage(
            "--hosts places teammates on other machines, which share only the team's database: give --store URL (or SWARM_STORE_URL)",
        ));
    }
    let known = swarm_hosts::Hosts::at(ctx.teams.root().path(), ctx.teams.root().lock_timeout());
    Ok(hosts.iter().try_for_each(|h| known.get(h).map(drop))?)
}

pub fn demo(ctx: &Ctx, args: DemoArgs) -> Result<u8> {
    let demo = Demo {
        teams: args.store.teams(&ctx.teams)?,
        launch: ctx.launch_settings(ctx.lead_settings()?, lead_dir()),
        attach: !args.no_attach && std::io::stdout().is_terminal(),
        teammates: args.teammates,
        dir: args
            .dir
            .unwrap_or_else(|| demo_run::scratch_dir(&std::env::temp_dir())),
        keep: args.keep,
        job: args.job,
    };
    Ok(demo_run::run(demo, &|line| println!("{line}"), &|line| {
        eprintln!("{line}")
    })?)
}
