//! `swarm team ...`: the roster by hand.

use serde_json::json;

use crate::store::names::{AgentName, TeamName};
use crate::store::roster::{self, NewMember, TeamConfig};
use crate::store::tasks::TaskList;
use crate::store::worktrees;
use crate::team::shutdown::{self, LadderOptions};
use crate::team::window::TeamWindowOptions;
use crate::team::worktree;
use crate::ui::cli::args::TeamCommand;
use crate::ui::cli::context::{Ctx, working_dir};
use crate::ui::cli::output::print_json;
use crate::util::error::{Error, Result};

pub fn run(ctx: &Ctx, cmd: TeamCommand) -> Result<()> {
    match cmd {
        TeamCommand::Create { team, description } => {
            let team = TeamName::new(&team)?;
            let cwd = working_dir(None)?;
            let config = roster::create(&ctx.root, &team, description, &cwd)?;
            if ctx.json() {
                print_json(&config);
            } else {
                println!(
                    "created team {team} at {}",
                    ctx.root.team_dir(&team).display()
                );
            }
            Ok(())
        }
        TeamCommand::List => {
            let teams = roster::list(&ctx.root)?;
            if ctx.json() {
                print_json(&teams);
            } else if teams.is_empty() {
                println!("no teams under {}", ctx.root.path().display());
            } else {
                for t in teams {
                    println!(
                        "{}  {} member(s){}",
                        t.name,
                        t.members.len(),
                        t.description.map(|d| format!("  {d}")).unwrap_or_default()
                    );
                }
            }
            Ok(())
        }
        TeamCommand::Show { team } => {
            let team = ctx.team_or(team.as_deref())?;
            let config = roster::load(&ctx.root, &team)?;
            if ctx.json() {
                print_json(&config);
            } else {
                print_roster(&config);
            }
            Ok(())
        }
        TeamCommand::Add {
            agent,
            color,
            agent_type,
            model,
            cwd,
        } => {
            let team = ctx.team()?;
            let name = AgentName::new(&agent)?;
            let cwd = working_dir(cwd.as_deref())?;
            let member = roster::add_member(
                &ctx.root,
                &team,
                NewMember {
                    name,
                    color,
                    agent_type,
                    model,
                    prompt: None,
                    plan_mode_required: false,
                    cwd: cwd.display().to_string(),
                },
            )?;
            if ctx.json() {
                print_json(&member);
            } else {
                println!("added {} to team {team}", member.name);
            }
            Ok(())
        }
        TeamCommand::Remove { agent } => {
            let team = ctx.team()?;
            let member = roster::remove_member(&ctx.root, &team, &agent)?;
            let released = TaskList::new(&ctx.root, &team).release(&member.name)?;
            let ids: Vec<&str> = released.iter().map(|t| t.id.as_str()).collect();
            if ctx.json() {
                print_json(&json!({"removed": member.name, "releasedTasks": ids}));
            } else {
                println!("removed {} from team {team}", member.name);
                if !ids.is_empty() {
                    println!("returned task(s) #{} to pending", ids.join(", #"));
                }
            }
            Ok(())
        }
        TeamCommand::Delete { team, force } => {
            let team = TeamName::new(&team)?;
            roster::load(&ctx.root, &team)?;
            let tmux = ctx.team_tmux(&team)?;
            let seen = crate::team::status::observe(&ctx.root, &team, Some(&tmux))?;
            let alive: Vec<String> = seen
                .members
                .iter()
                .filter(|m| {
                    m.name != crate::store::names::LEAD && (m.alive || m.pane_alive == Some(true))
                })
                .map(|m| {
                    format!(
                        "{} ({}{})",
                        m.name,
                        m.state,
                        m.pid.map(|p| format!(", pid {p}")).unwrap_or_default()
                    )
                })
                .collect();
            if !alive.is_empty() && !force {
                return Err(Error::conflict(format!(
                    "team '{team}' still has running teammates: {}; shut them down with `swarm shutdown --all`, or pass --force",
                    alive.join(", ")
                )));
            }
            if !force {
                refuse_unmerged(&ctx.root, &team)?;
            }
            let ladder = LadderOptions {
                timeout: std::time::Duration::from_secs(10),
                ..LadderOptions::new(ctx.settings.dirs.clone())
            };
            let say = |line: &str| println!("{line}");
            for result in shutdown::stop_team(&ctx.root, &team, Some(&tmux), &ladder, &say) {
                result?;
            }
            let options =
                TeamWindowOptions::for_team(&ctx.root, &team, ctx.settings.panes_per_window);
            if let Some(window) = crate::team::window::TeamWindow::find(&tmux, &team, options)? {
                window.close()?;
            }
            // The lead goes with its pane; let it finish before its files go.
            if let Some(lead) = seen
                .member(crate::store::names::LEAD)
                .filter(|m| m.alive)
                .and_then(|m| m.pid)
            {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while crate::util::process::is_alive(lead) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
            // Settled by the ladder above; what is left is kept work (or a teammate that
            // died unseen). Check again: the ladder may just have kept some.
            if !force {
                refuse_unmerged(&ctx.root, &team)?;
            }
            let mut removed = Vec::new();
            for record in worktrees::all(&ctx.root, &team)? {
                // Only --force gets here with unmerged work: say what it threw away.
                let lost = worktree::changes(&record)
                    .ok()
                    .filter(|c| c.unmerged())
                    .map(|c| c.describe());
                if let Err(e) = worktree::remove(&ctx.root, &team, &record) {
                    // The team goes anyway; what is left is the user's to tidy.
                    eprintln!(
                        "swarm: warning: {e}; remove worktree {} and branch {} by hand",
                        record.path.display(),
                        record.branch
                    );
                    continue;
                }
                if !ctx.json() {
                    println!(
                        "removed worktree {} and branch {}{}",
                        record.path.display(),
                        record.branch,
                        lost.map(|l| format!(", discarding {l}"))
                            .unwrap_or_default()
                    );
                }
                removed.push(record.branch);
            }
            roster::delete_files(&ctx.root, &team)?;
            if ctx.json() {
                print_json(&json!({"deleted": team.as_str(), "removedWorktrees": removed}));
            } else {
                println!("deleted team {team}");
            }
            Ok(())
        }
    }
}

/// Refuses when a worktree of the team holds work that deleting it would lose.
fn refuse_unmerged(root: &crate::store::layout::Root, team: &TeamName) -> Result<()> {
    let mut held = Vec::new();
    for record in worktrees::all(root, team)? {
        match worktree::changes(&record) {
            Ok(c) if c.unmerged() => held.push(format!(
                "{} at {} ({})",
                record.branch,
                record.path.display(),
                c.describe()
            )),
            Ok(_) => {}
            // Its repository is gone: nothing is left to lose.
            Err(_) if !record.git_dir.exists() => {}
            Err(e) => held.push(format!(
                "{} at {} ({e})",
                record.branch,
                record.path.display()
            )),
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(Error::conflict(format!(
        "team '{team}' has worktree(s) with unmerged work: {}; merge or keep that work (git merge <branch>), or pass --force to delete it with the team",
        held.join("; ")
    )))
}

fn print_roster(config: &TeamConfig) {
    println!(
        "team {}{}",
        config.name,
        config
            .description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default()
    );
    println!(
        "  {:<20} {:<18} {:<8} {:<6} {:<8} CWD",
        "NAME", "TYPE", "COLOR", "PANE", "PID"
    );
    for m in &config.members {
        let dash = || "-".to_owned();
        println!(
            "  {:<20} {:<18} {:<8} {:<6} {:<8} {}",
            m.name,
            m.agent_type.clone().unwrap_or_else(dash),
            m.color.clone().unwrap_or_else(dash),
            if m.tmux_pane_id.is_empty() {
                dash()
            } else {
                m.tmux_pane_id.clone()
            },
            m.pid.map(|p| p.to_string()).unwrap_or_else(dash),
            m.cwd
        );
    }
}
