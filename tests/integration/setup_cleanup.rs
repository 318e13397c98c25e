//! What a newcomer's runs leave behind: the demo on a terminal returns by itself when the
//! team is done, a failed demo cleans up after itself, `team delete` removes a half-made
//! team, a finished `swarm run` takes its session with it, and `team prune` removes the
//! finished teams. All on this test's private tmux server.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use swarm_model_server::{Reply, Script};
use swarm_util::names::{AgentName, TeamName};

use crate::harness::{Guarded, SWARM, ScriptedModel, TestEnv, run_timeout, wait_until};

/// The sessions on this test's tmux server, by name.
fn sessions(env: &TestEnv) -> Vec<String> {
    let out = env
        .tmux_cmd()
        .args(["list-sessions", "-F", "#{session_name}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The team folders under the test's root.
fn team_dirs(env: &TestEnv) -> Vec<String> {
    std::fs::read_dir(env.root.join("teams"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The demo's scratch directories under the test's TMPDIR.
fn scratch_dirs(env: &TestEnv) -> Vec<String> {
    std::fs::read_dir(env.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("swarm-demo-"))
        .collect()
}

/// A terminal for the demo: a pane of a second private tmux server (so the demo's own
/// tmux client, on the test's server, runs in it as on a person's terminal). `tmux_var`
/// is the demo's `$TMUX`: unset is outside tmux. The pane's shell writes the demo's exit
/// code to `rc` and then stays, so its screen can be read.
struct Terminal<'a> {
    env: &'a TestEnv,
    socket: String,
    rc: PathBuf,
}

/// `swarm demo` on a job at `job` in a shell that writes its exit code to `rc` and then
/// stays, with nothing of the test's environment but this test's own: `$TMUX` as given
/// (unset is outside tmux), and the team's tmux server named by `$SWARM_TMUX_SOCKET` unless
/// `$TMUX` is to say it.
fn demo_argv(
    env: &TestEnv,
    tmux_var: Option<&str>,
    by_socket: bool,
    job: &Path,
    rc: &Path,
) -> Vec<String> {
    let mut argv: Vec<String> = vec!["env".into(), "-i".into()];
    for (k, v) in [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", env.home.display().to_string()),
        ("TMPDIR", env.dir.path().display().to_string()),
        ("SWARM_ROOT", env.root.display().to_string()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
        ("GIT_CONFIG_SYSTEM", "/dev/null".into()),
        ("SWARM_LOCK_TIMEOUT_MS", "60000".into()),
        ("TERM", "screen".into()),
    ] {
        argv.push(format!("{k}={v}"));
    }
    if by_socket {
        argv.push(format!("SWARM_TMUX_SOCKET={}", env.tmux_socket));
    }
    if let Some(t) = tmux_var {
        argv.push(format!("TMUX={t}"));
    }
    argv.extend([
        "sh".into(),
        "-c".into(),
        "\"$0\" demo --teammates 1 --dir \"$1\"; echo $? > \"$2\"; exec sleep 600".into(),
        SWARM.into(),
        job.display().to_string(),
        rc.display().to_string(),
    ]);
    argv
}

impl<'a> Terminal<'a> {
    fn start(env: &'a TestEnv, tmux_var: Option<&str>, job: &Path) -> Terminal<'a> {
        let socket = format!("{}-term", env.tmux_socket);
        let rc = env.dir.path().join("rc");
        let argv = demo_argv(env, tmux_var, true, job, &rc);
        let status = env
            .tmux_cmd_on(&socket)
            .args(["new-session", "-d", "-x", "160", "-y", "50"])
            .args(&argv)
            .status()
            .unwrap();
        assert!(status.success());
        Terminal { env, socket, rc }
    }

    /// The exit code of the demo, once it has ended.
    fn wait(&self, timeout: Duration) -> Option<i32> {
        wait_until(timeout, || {
            std::fs::read_to_string(&self.rc).is_ok_and(|s| s.ends_with('\n'))
        });
        std::fs::read_to_string(&self.rc)
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    fn screen(&self) -> String {
        let out = self
            .env
            .tmux_cmd_on(&self.socket)
            .args(["capture-pane", "-p", "-S", "-300"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Terminal<'_> {
    fn drop(&mut self) {
        let _ = self
            .env
            .tmux_cmd_on(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_file(crate::harness::tmux_socket_path(&self.socket));
    }
}

/// The demo on a terminal with `$TMUX` as given: it shows the team, then returns by
/// itself when the team is done, with the report, and leaves no session behind.
fn demo_on_a_terminal_returns_by_itself(tmux_var: Option<&str>) {
    let env = TestEnv::new();
    let job = env.dir.path().join("job");
    let term = Terminal::start(&env, tmux_var, &job);
    let code = term.wait(Duration::from_secs(240));
    let screen = term.screen();
    assert_eq!(code, Some(0), "the demo did not end by itself:\n{screen}");
    assert!(
        screen.contains("the job's check passed"),
        "no report after the team window:\n{screen}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || sessions(&env).is_empty()),
        "sessions left: {:?}",
        sessions(&env)
    );
    assert!(team_dirs(&env).is_empty(), "{:?}", team_dirs(&env));
}

#[test]
fn the_demo_outside_tmux_returns_by_itself_when_the_team_is_done() {
    demo_on_a_terminal_returns_by_itself(None);
}

#[test]
fn the_demo_inside_another_tmux_server_shows_the_team_on_its_terminal() {
    // `switch-client` there has no client of the team's server to switch.
    demo_on_a_terminal_returns_by_itself(Some("/nonexistent/swarm-test-bogus,0,0"));
}

#[test]
fn a_failed_demo_cleans_up_after_itself() {
    let env = TestEnv::new();
    let mut demo = env.swarm(&["demo", "--no-attach", "--teammates", "1"]);
    demo.stdout(Stdio::null()).stderr(Stdio::null());
    let mut demo = Guarded(Some(demo.spawn().unwrap()));
    // Its lead dies under it: the demo fails.
    let root = env.teams();
    let mut lead = None;
    assert!(
        wait_until(Duration::from_secs(60), || {
            lead = team_dirs(&env).first().and_then(|t| {
                root.open(&TeamName::new(t).ok()?)
                    .unwrap()
                    .agents()
                    .read_state(&AgentName::lead())
            });
            lead.is_some()
        }),
        "the demo's lead never started"
    );
    assert!(!scratch_dirs(&env).is_empty());
    let lead = lead.unwrap();
    crate::harness::signal_recorded(
        lead.pid,
        lead.start_ticks,
        nix::sys::signal::Signal::SIGKILL,
    );
    let status = demo
        .wait(Duration::from_secs(90))
        .expect("the failed demo did not end");
    assert!(!status.success());
    assert!(
        sessions(&env).is_empty(),
        "sessions left: {:?}",
        sessions(&env)
    );
    assert!(
        team_dirs(&env).is_empty(),
        "team folders left: {:?}",
        team_dirs(&env)
    );
    assert!(scratch_dirs(&env).is_empty(), "{:?}", scratch_dirs(&env));
}

#[test]
fn team_delete_removes_a_half_made_team() {
    let env = TestEnv::new();
    let half = env.root.join("teams/demo-1234");
    std::fs::create_dir_all(half.join("state")).unwrap();
    std::fs::write(half.join("state/team-lead.json"), "{}").unwrap();
    let out = env.run(&["team", "list"]).success();
    assert!(
        out.stdout.contains("demo-1234  half-made"),
        "{}",
        out.stdout
    );
    let out = env.run(&["team", "delete", "demo-1234"]).success();
    assert!(
        out.stdout.contains("deleted team demo-1234"),
        "{}",
        out.stdout
    );
    assert!(!half.exists());
}

/// `swarm run` of team `t` on a lead that finishes at once; returns its output.
fn finished_run(env: &TestEnv, extra: &[&str]) -> String {
    let model =
        ScriptedModel::start(Script::new().default_reply(Reply::text("DONE: nothing to do.")));
    let mut cmd = env.swarm(&[
        "run",
        "what is in the readme?",
        "--team",
        "t",
        "--no-attach",
        "--provider",
        "scripted",
    ]);
    cmd.args(extra).arg("--base-url").arg(model.url());
    run_timeout(&mut cmd, Duration::from_secs(60))
        .success()
        .stdout
}

#[test]
fn a_finished_run_takes_its_session_with_it_unless_kept() {
    let env = TestEnv::new();
    finished_run(&env, &[]);
    assert!(
        sessions(&env).is_empty(),
        "sessions left: {:?}",
        sessions(&env)
    );
    env.run(&["team", "delete", "t"]).success();
    finished_run(&env, &["--keep"]);
    assert_eq!(sessions(&env), ["swarm-t"]);
}

#[test]
fn team_prune_removes_finished_teams_and_no_other() {
    let env = TestEnv::new();
    finished_run(&env, &["--keep"]);
    env.run(&["team", "create", "idle"]).success();
    let out = env.run(&["team", "prune"]).success();
    assert!(
        out.stdout.contains("deleted finished team t"),
        "{}",
        out.stdout
    );
    assert_eq!(team_dirs(&env), ["idle"]);
    assert!(
        sessions(&env).is_empty(),
        "sessions left: {:?}",
        sessions(&env)
    );
    let out = env.run(&["--json", "team", "prune"]).success();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["pruned"], serde_json::json!([]));
}

#[test]
fn a_demo_in_its_own_session_on_the_users_server_hands_the_client_back() {
    // The person's server (this test's) with their session, and their client on it, in a
    // terminal of another server.
    let env = TestEnv::new();
    let tmux = |socket: &str, args: &[&str]| {
        let out = env.tmux_cmd_on(socket).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let s = env.tmux_socket.clone();
    let host = format!("{s}-term");
    let rc = env.dir.path().join("rc");
    // Ends the person's terminal server, also when an assertion fails.
    let _terminal = Terminal {
        env: &env,
        socket: host.clone(),
        rc: rc.clone(),
    };
    tmux(
        &s,
        &[
            "new-session",
            "-d",
            "-s",
            "user",
            "-x",
            "160",
            "-y",
            "50",
            "sleep 600",
        ],
    );
    let index = tmux(&s, &["display", "-p", "-t", "user", "#{session_id}"]).replace('$', "");
    let attach = format!("env -u TMUX TERM=screen tmux -L {s} attach -t user");
    tmux(
        &host,
        &["new-session", "-d", "-x", "160", "-y", "50", &attach],
    );
    let clients = || tmux(&s, &["list-clients", "-F", "#{session_name}"]);
    assert!(
        wait_until(Duration::from_secs(10), || clients() == "user"),
        "no client: {:?}",
        clients()
    );
    // The demo, from a terminal whose $TMUX names that server but no pane of it: its team
    // gets a session of its own there, and the person's client is switched to it.
    let job = env.dir.path().join("job");
    let tmux_var = format!("{},1,{index}", env.tmux_socket_path().display());
    let argv = demo_argv(&env, Some(&tmux_var), false, &job, &rc);
    let status = env
        .tmux_cmd_on(&host)
        .args(["new-window", "-d"])
        .args(&argv)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        wait_until(Duration::from_secs(60), || clients()
            .starts_with("swarm-demo-")),
        "the client was not switched to the demo: {:?}",
        clients()
    );
    assert!(
        wait_until(Duration::from_secs(240), || std::fs::read_to_string(&rc)
            .is_ok_and(|s| s.ends_with('\n'))),
        "the demo did not end"
    );
    assert_eq!(std::fs::read_to_string(&rc).unwrap().trim(), "0");
    assert!(
        wait_until(Duration::from_secs(10), || clients() == "user"),
        "the person's client was not handed back to their session: {:?}",
        clients()
    );
}
