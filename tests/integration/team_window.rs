//! The team window on a real tmux server: layout, tags and overflow windows, dead panes,
//! kill and close never touching a user's panes, placement inside tmux, concurrent adders
//! and secrets. One private server per test, as in `tmux.rs`, whose helpers these share.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use swarm_store::roster::{PALETTE, tmux_colour};
use swarm_team::spawn::window::{Placement, TeamWindow};
use swarm_tmux::{
    Direction, NewSession, PANE_OPTION, PaneId, PaneRecord, PaneSpec, TEAM_OPTION, Tmux,
};
use swarm_util::error::exit;

use crate::harness::{TestEnv, wait_until};
use crate::tmux::{WAIT, agent, alive, keeper, opts, pane, python3, sleeper, team};

fn option(tmux: &Tmux, p: PaneId, name: &str) -> String {
    tmux.display(&p, &format!("#{{{name}}}")).unwrap()
}

#[test]
fn team_window_lays_out_tags_and_overflows() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let t = team("blue-team");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let sessions = tmux.list_sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].name, "swarm-blue-team");
    assert_eq!(sessions[0].id, tw.session());
    let lead = tw.lead_pane().unwrap().expect("a lead pane");

    let names: Vec<String> = (1..=8).map(|i| format!("mate{i}")).collect();
    let mut ids = Vec::new();
    for (i, name) in names.iter().enumerate().take(3) {
        let colour = PALETTE[(i + 1) % PALETTE.len()];
        ids.push(
            tw.add_teammate(&agent(name), colour, &sleeper(dir))
                .unwrap(),
        );
    }

    // Lead on the left at about 30 % of 200 columns, full height; teammates to its right.
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 4);
    let l = pane(&panes, lead).unwrap();
    // `pane-border-status top` takes the first row.
    assert_eq!((l.left, l.top), (0, 1));
    assert!(
        (57..=63).contains(&l.width),
        "lead is {} columns wide",
        l.width
    );
    assert!(l.height >= 45, "lead is {} rows high", l.height);
    for id in &ids {
        let p = pane(&panes, *id).unwrap();
        assert_eq!(p.window, l.window);
        assert!(p.left > l.width, "{} is not right of the lead", p.pane);
    }

    for (i, name) in names.iter().enumerate().skip(3) {
        let colour = PALETTE[(i + 1) % PALETTE.len()];
        ids.push(
            tw.add_teammate(&agent(name), colour, &sleeper(dir))
                .unwrap(),
        );
    }
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 9);
    let mut per_window: BTreeMap<_, Vec<&PaneRecord>> = BTreeMap::new();
    for p in &panes {
        per_window.entry(p.window).or_default().push(p);
    }
    let counts: Vec<usize> = per_window.values().map(Vec::len).collect();
    assert_eq!(counts, [6, 3], "panes per window");
    assert!(per_window[&l.window].iter().any(|p| p.pane == lead));
    assert!(panes.iter().all(|p| p.session == tw.session()));

    // Every pane: tagged, kept when dead, its agent's name in its border in its colour.
    // Border styles are window options holding a format; `E:` expands one for a pane.
    let lead_colour = tmux_colour(PALETTE[0]);
    assert_eq!(
        pane(&panes, lead).unwrap().agent.as_deref(),
        Some("team-lead")
    );
    assert_eq!(
        option(&tmux, lead, "E:pane-border-style"),
        format!("fg={lead_colour}")
    );
    for (i, (id, name)) in ids.iter().zip(&names).enumerate() {
        let p = pane(&panes, *id).unwrap();
        let colour = tmux_colour(PALETTE[(i + 1) % PALETTE.len()]);
        assert_eq!(p.team.as_deref(), Some("blue-team"));
        assert_eq!(p.agent.as_deref(), Some(name.as_str()));
        assert_eq!(&p.title, name);
        assert!(!p.dead);
        assert_eq!(option(&tmux, *id, "remain-on-exit"), "on");
        assert_eq!(
            option(&tmux, *id, "E:pane-border-style"),
            format!("fg={colour}")
        );
        assert_eq!(
            option(&tmux, *id, "E:pane-active-border-style"),
            format!("fg={colour},bold")
        );
        assert_eq!(
            option(&tmux, *id, "pane-border-format"),
            format!("#[fg={colour},bold] #{{@swarm-agent}} #[default]")
        );
        assert_eq!(option(&tmux, *id, "pane-border-status"), "top");
    }
    // The purple and orange teammates use Claude Code's tmux colour names.
    assert_eq!(option(&tmux, ids[3], "E:pane-border-style"), "fg=magenta");
    assert_eq!(option(&tmux, ids[4], "E:pane-border-style"), "fg=colour208");

    // A fresh process finds the window from the tags and adds to it.
    let mut again = TeamWindow::find(&tmux, &t, opts(&env))
        .unwrap()
        .expect("found");
    assert_eq!(again.session(), tw.session());
    let tenth = again
        .add_teammate(&agent("mate9"), "cyan", &sleeper(dir))
        .unwrap();
    let panes = again.panes().unwrap();
    assert_eq!(panes.len(), 10);
    assert_ne!(pane(&panes, tenth).unwrap().window, l.window);

    // One pane per agent.
    let e = again
        .add_teammate(&agent("mate1"), "red", &sleeper(dir))
        .unwrap_err();
    assert_eq!(swarm::exit::exit_code(&e), exit::CONFLICT, "{e}");
    // One window per team.
    let e =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap_err();
    assert_eq!(swarm::exit::exit_code(&e), exit::CONFLICT, "{e}");
    assert!(
        TeamWindow::find(&tmux, &team("other"), opts(&env))
            .unwrap()
            .is_none()
    );

    assert_eq!(tw.close().unwrap(), 10);
    assert!(TeamWindow::find(&tmux, &t, opts(&env)).unwrap().is_none());
    assert!(!tmux.has_session("swarm-blue-team").unwrap());
    // That was the server's last session, so it exits (exit-empty), a moment later;
    // until then it has no panes. Opening again starts a new one on the same socket.
    assert!(wait_until(WAIT, || match tmux.list_panes() {
        Ok(panes) => {
            assert!(panes.is_empty(), "{panes:?}");
            false
        }
        Err(e) => e.is_no_server(),
    }));
    let tw = TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    assert_eq!(tw.panes().unwrap().len(), 1);
}

#[test]
fn a_teammate_that_dies_leaves_its_pane_and_exit_status() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let t = team("crashy");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let py = python3().display().to_string();
    let p = tw
        .add_teammate(
            &agent("crasher"),
            "green",
            &PaneSpec::new(dir, [py.as_str(), "-c", "import sys; sys.exit(3)"]),
        )
        .unwrap();
    // tmux sees the pty close a moment before it reaps the process: wait for the status.
    assert!(wait_until(WAIT, || {
        tw.panes()
            .unwrap()
            .iter()
            .any(|r| r.pane == p && r.dead && r.dead_status.is_some())
    }));
    let r = tw
        .panes()
        .unwrap()
        .into_iter()
        .find(|r| r.pane == p)
        .unwrap();
    assert_eq!(r.dead_status, Some(3));
    assert_eq!(r.agent.as_deref(), Some("crasher"));
    // The dead pane still holds the agent's place until it is killed.
    let e = tw
        .add_teammate(&agent("crasher"), "green", &sleeper(dir))
        .unwrap_err();
    assert!(e.to_string().contains("(dead)"), "{e}");
    tw.kill_pane(p).unwrap();
    tw.add_teammate(&agent("crasher"), "green", &sleeper(dir))
        .unwrap();
}

#[test]
fn close_and_kill_pane_never_touch_a_users_panes() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let user = tmux
        .new_session(&NewSession {
            name: "user",
            window_name: None,
            size: Some((200, 50)),
            spec: &sleeper(dir),
        })
        .unwrap();
    let t = team("careful");
    let mut tw =
        TeamWindow::open(&tmux, &t, &sleeper(dir), Placement::Detached, opts(&env)).unwrap();
    let a = tw.add_teammate(&agent("a"), "blue", &sleeper(dir)).unwrap();
    let b = tw
        .add_teammate(&agent("b"), "green", &sleeper(dir))
        .unwrap();
    let lead = tw.lead_pane().unwrap().unwrap();
    // The user splits the team's window...
    let intruder = tmux
        .split_window(lead, Direction::Vertical, None, &sleeper(dir))
        .unwrap();
    // ...and forges the team's tags on their own window, naming their pane: a tag a pane
    // inherits from its window, which only a kill's pane-scope check sees through.
    tmux.set_window_option(user.window, TEAM_OPTION, "careful")
        .unwrap();
    tmux.set_window_option(user.window, PANE_OPTION, &user.pane.to_string())
        .unwrap();
    let listed = |tw: &TeamWindow| -> BTreeSet<PaneId> {
        tw.panes().unwrap().iter().map(|p| p.pane).collect()
    };
    assert_eq!(listed(&tw), BTreeSet::from([lead, a, b, user.pane]));

    for p in [user.pane, intruder] {
        let e = tw.kill_pane(p).unwrap_err();
        assert_eq!(swarm::exit::exit_code(&e), exit::CONFLICT, "{e}");
        assert!(alive(&tmux, p));
    }

    tw.kill_pane(a).unwrap();
    assert!(!alive(&tmux, a));
    tw.kill_pane(a).unwrap();

    assert_eq!(tw.close().unwrap(), 2);
    assert!(!alive(&tmux, b) && !alive(&tmux, lead));
    assert!(alive(&tmux, user.pane));
    assert!(alive(&tmux, intruder));
    // The team's session stays while it holds the user's pane.
    assert!(tmux.has_session("swarm-careful").unwrap());
    assert_eq!(listed(&tw), BTreeSet::from([user.pane]));
    assert_eq!(tw.close().unwrap(), 0);
    assert!(alive(&tmux, user.pane));
}

#[test]
fn inside_tmux_the_team_gets_its_own_window_in_the_users_session() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path();
    let user = keeper(&env, &tmux);
    let t = team("inside");
    // As for a lead started from the user's pane ($TMUX_PANE).
    let placement = Placement::beside(&tmux, user.pane).unwrap();
    assert_eq!(placement, Placement::InSession(user.session));
    let mut tw = TeamWindow::open(&tmux, &t, &sleeper(dir), placement, opts(&env)).unwrap();
    assert_eq!(tw.session(), user.session);
    for name in ["a", "b"] {
        tw.add_teammate(&agent(name), "yellow", &sleeper(dir))
            .unwrap();
    }
    let all = tmux.list_panes().unwrap();
    let team_windows: BTreeSet<_> = all
        .iter()
        .filter(|p| p.belongs_to("inside"))
        .map(|p| p.window)
        .collect();
    assert_eq!(team_windows.len(), 1);
    assert!(
        !team_windows.contains(&user.window),
        "the user's window was split"
    );
    assert_eq!(all.iter().filter(|p| p.window == user.window).count(), 1);
    assert_eq!(
        tmux.display(&user.pane, "#{window_active}").unwrap(),
        "1",
        "focus moved off the user's window"
    );
    assert_eq!(tw.close().unwrap(), 3);
    let all = tmux.list_panes().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].pane, user.pane);
}

#[test]
fn concurrent_processes_adding_teammates_respect_the_window_limit() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let dir = env.dir.path().to_path_buf();
    let t = team("busy");
    let mut o = opts(&env);
    o.panes_per_window = 3;
    TeamWindow::open(&tmux, &t, &sleeper(&dir), Placement::Detached, o.clone()).unwrap();
    // Each thread opens the lock file itself, as separate processes would.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (tmux, t, o, dir) = (tmux.clone(), t.clone(), o.clone(), dir.clone());
            std::thread::spawn(move || {
                let mut tw = TeamWindow::find(&tmux, &t, o).unwrap().unwrap();
                for j in 0..2 {
                    tw.add_teammate(&agent(&format!("w{i}-{j}")), "pink", &sleeper(&dir))
                        .unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let tw = TeamWindow::find(&tmux, &t, o).unwrap().unwrap();
    let panes = tw.panes().unwrap();
    assert_eq!(panes.len(), 9);
    let agents: BTreeSet<_> = panes.iter().map(|p| p.agent.clone().unwrap()).collect();
    assert_eq!(agents.len(), 9);
    let mut per_window: BTreeMap<_, usize> = BTreeMap::new();
    for p in &panes {
        *per_window.entry(p.window).or_default() += 1;
    }
    assert_eq!(per_window.values().copied().collect::<Vec<_>>(), [3, 3, 3]);
}

#[test]
fn secrets_reach_the_pane_but_no_command_line() {
    let env = TestEnv::new();
    let tmux = env.tmux();
    let out = env.dir.path().join("secret.out");
    let secret = "sk-'quote\"dq$var;semi#{pane_id}\\back";
    let spec = PaneSpec::new(
        env.dir.path(),
        ["python3", "-c", "import os,sys; open(sys.argv[1],'w').write(os.environ.get('SWARM_TEST_KEY','<unset>'))", &out.display().to_string()],
    )
    .secret_env("SWARM_TEST_KEY", secret);
    let team = swarm_util::names::TeamName::new("sec").unwrap();
    let opts = swarm_team::spawn::window::TeamWindowOptions::new(env.dir.path().join("tmux.flock"));
    let lead = PaneSpec::new(env.dir.path(), ["sleep", "600"]);
    let mut tw = swarm_team::spawn::window::TeamWindow::open(
        &tmux,
        &team,
        &lead,
        swarm_team::spawn::window::Placement::Detached,
        opts,
    )
    .unwrap();
    let pane = tw
        .add_teammate(
            &swarm_util::names::AgentName::new("bob").unwrap(),
            "blue",
            &spec,
        )
        .unwrap();
    assert!(crate::harness::wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&out).is_ok_and(|s| !s.is_empty())
    }));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), secret);
    let start = tmux.display(&pane, "#{pane_start_command}").unwrap();
    assert!(!start.contains("sk-"), "{start}");
    // Gone from the session environment again.
    let session_env = env
        .tmux_cmd()
        .args(["show-environment", "-t", &tw.session().to_string()])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&session_env.stdout).contains("SWARM_TEST_KEY"));
    // A value tmux cannot be given quietly is refused, not passed in argv.
    let bad = PaneSpec::new(env.dir.path(), ["sleep", "1"]).secret_env("K", "line\nbreak");
    assert!(
        tw.add_teammate(
            &swarm_util::names::AgentName::new("carol").unwrap(),
            "green",
            &bad
        )
        .is_err()
    );
}
