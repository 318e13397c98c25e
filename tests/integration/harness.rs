//! The test environment: a private root, HOME and tmux socket per test, and the real
//! binaries run with a cleared environment and a timeout.
//!
//! Every tmux call of a test goes through [`TestEnv`]: [`TestEnv::tmux`] (the library's
//! handle) and [`TestEnv::tmux_cmd`] (the tmux CLI) reach the same server as the swarm
//! processes the test starts, whatever `TMUX_TMPDIR` or `TMUX` the test itself runs with,
//! and a server any of them starts gets the cleared environment the children get, never
//! the caller's API keys. Dropping the `TestEnv` kills that server and no other.
//!
//! A test that cannot run here for want of a tool or privilege calls [`require`]: under
//! `CI=true` (where `.ci/run` installs everything) it fails, elsewhere it says SKIPPED.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use swarm_store::layout::Root;
use swarm_tmux::Tmux;
use swarm_util::names::TeamName;

pub const SWARM: &str = env!("CARGO_BIN_EXE_swarm");
pub const STRESS: &str = env!("CARGO_BIN_EXE_swarm-stress");
/// A Claude Code teammate on the wire (see `bin/fake-claude.rs`).
pub const FAKE_CLAUDE: &str = env!("CARGO_BIN_EXE_swarm-fake-claude");

/// Long enough for a loaded 2-core CI machine; a hang fails instead of stalling CI.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub tmux_socket: String,
    /// Where this test's new teams are made: a PostgreSQL database's URL (given to every
    /// child as `SWARM_STORE_URL`), or `None` for files.
    pub store_url: Option<String>,
    /// How its children give the database's password, which its URL never holds.
    pub password: Option<Password>,
    /// How this test process opens its teams (see [`TestEnv::teams`]).
    opener: std::sync::OnceLock<std::sync::Arc<swarm_store_pg::PgOpener>>,
}

/// The two ways the README names to give a PostgreSQL team's password.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Password {
    /// `PGPASSWORD` in every child's environment.
    Variable,
    /// A line in `~/.pgpass` (the test's `HOME`), mode 0600.
    File,
}

/// Where a test's teams live: the long-jobs tests run once on each (see
/// [`on_every_backend`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Files,
    Postgres,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = tempfile::Builder::new()
            .prefix("swarm-test-")
            .tempdir()
            .unwrap();
        let root = dir.path().join("claude");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let tmux_socket = format!(
            "swarm-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        TestEnv {
            dir,
            root,
            home,
            tmux_socket,
            store_url: None,
            password: None,
            opener: std::sync::OnceLock::new(),
        }
    }

    /// A test environment whose new teams (`team create`, `run`, `demo`) are made on
    /// `backend`; `None` (said loudly, a failure under `CI=true`) where PostgreSQL is not
    /// installed.
    pub fn on(backend: Backend) -> Option<TestEnv> {
        let mut env = TestEnv::new();
        if backend == Backend::Postgres {
            // As a user's server: over TCP, asking for a password. Which of the README's
            // ways gives it is the test's name's to decide, so the suite tries both.
            let name = std::thread::current().name().unwrap_or("").to_owned();
            let way = match name.bytes().map(u32::from).sum::<u32>() % 2 {
                0 => Password::Variable,
                _ => Password::File,
            };
            env.store_url = Some(swarm_store_pg::testing::team_database()?);
            env.give_password(way);
        }
        Some(env)
    }

    /// Gives the test database's password to every child `way`.
    pub fn give_password(&mut self, way: Password) {
        if way == Password::File {
            let line = swarm_store_pg::testing::password_file_line().unwrap();
            write_private(&self.home.join(".pgpass"), &line);
        }
        self.password = Some(way);
    }

    /// Fails the test unless `team` was made where this test makes its teams: on its
    /// database (the team's pointer names it), or as files (no pointer).
    pub fn assert_on_its_backend(&self, team: &str) {
        let made_at = self.store_root().store_url(&self.team_name(team)).unwrap();
        assert_eq!(
            made_at, self.store_url,
            "team {team} made on the wrong backend"
        );
    }

    /// [`TestEnv::with_team`] on `backend` (`None` as for [`TestEnv::on`]).
    pub fn with_team_on(backend: Backend, team: &str, members: &[&str]) -> Option<TestEnv> {
        let env = TestEnv::on(backend)?;
        env.run(&["team", "create", team]).success();
        let made_at = env.store_root().store_url(&env.team_name(team)).unwrap();
        assert_eq!(
            made_at, env.store_url,
            "team {team} made on the wrong backend"
        );
        for m in members {
            env.run(&["--team", team, "team", "add", m]).success();
        }
        Some(env)
    }

    /// A team made through the CLI.
    pub fn with_team(team: &str, members: &[&str]) -> TestEnv {
        let env = TestEnv::new();
        env.run(&["team", "create", team]).success();
        for m in members {
            env.run(&["--team", team, "team", "add", m]).success();
        }
        env
    }

    /// A handle on this test's own tmux server, which never reads the user's config. It
    /// names the socket by path, the one the children's `-L` name resolves to, and starts
    /// tmux with none of this process's environment but `PATH`.
    pub fn tmux(&self) -> Tmux {
        Tmux::with_server(swarm_tmux::Server::Path(self.tmux_socket_path()))
            .config_file("/dev/null")
            .hide_env(std::env::vars_os().map(|(k, _)| k).filter(|k| k != "PATH"))
    }

    /// The tmux CLI on this test's server, with the children's environment.
    pub fn tmux_cmd(&self) -> Command {
        self.tmux_cmd_on(&self.tmux_socket)
    }

    /// The tmux CLI on another server of this test's (`-L socket`, which should start with
    /// [`TestEnv::tmux_socket`]), with the children's environment; the test kills it.
    pub fn tmux_cmd_on(&self, socket: &str) -> Command {
        let mut cmd = self.command("tmux");
        cmd.args(["-L", socket, "-f", "/dev/null"]);
        cmd
    }

    /// Where this test's tmux socket lives: the children run without `TMUX_TMPDIR`, so their
    /// `-L` names live in tmux's default directory, `/tmp/tmux-<uid>/`.
    pub fn tmux_socket_path(&self) -> PathBuf {
        tmux_socket_path(&self.tmux_socket)
    }

    /// This test's root: where its teams' files are.
    pub fn store_root(&self) -> Root {
        Root::new(&self.root)
    }

    /// This test's teams, as the swarm binary opens them: a team with a pointer is opened
    /// on its database server.
    pub fn teams(&self) -> swarm_store::Teams {
        // One opener per test, so its teams share one pool per server; it finds what this
        // test's children find in their home (a password file, a root certificate), and
        // the shared test server's password.
        let opener = self.opener.get_or_init(|| {
            let password = swarm_store_pg::testing::TEAM_PASSWORD;
            let home = self.home.display().to_string();
            let env = swarm_util::environment::Environment::from_pairs([
                ("PGPASSWORD", password),
                ("HOME", home.as_str()),
            ]);
            std::sync::Arc::new(swarm_store_pg::PgOpener::new(env))
        });
        swarm_store::Teams::new(self.store_root()).with_servers(opener.clone())
    }

    pub fn team_name(&self, team: &str) -> TeamName {
        TeamName::new(team).unwrap()
    }

    /// `team`'s shared state, through the store's seam.
    /// On PostgreSQL, a team made as files (its roster a file) fails the test: the test
    /// would be checking the wrong backend.
    pub fn store(&self, team: &str) -> swarm_store::Store {
        if self.store_url.is_some() {
            let roster = self.root.join("teams").join(team).join("config.json");
            assert!(
                !roster.exists(),
                "team {team} was made as files, not on the test's database: {}",
                roster.display()
            );
        }
        self.teams().open(&self.team_name(team)).unwrap()
    }

    /// Whether `name` is on `team`'s roster (false while the team has none yet: Claude
    /// Code makes a team's folder before its roster).
    pub fn on_roster(&self, team: &str, name: &str) -> bool {
        self.teams()
            .open(&self.team_name(team))
            .unwrap()
            .roster()
            .load()
            .is_ok_and(|c| c.member(name).is_some())
    }

    /// The environment every child gets: nothing of the user's, and our own root/socket.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TMPDIR", self.dir.path())
            .env("SWARM_ROOT", &self.root)
            .env("SWARM_TMUX_SOCKET", &self.tmux_socket)
            .env("TMUX", "/nonexistent/swarm-test-bogus,0,0")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_SYSTEM", "/dev/null")
            // Tests check that nothing is lost or doubled, not how fast: on a loaded CI
            // machine a lock may legitimately take longer than the 10 s a person gets.
            .env("SWARM_LOCK_TIMEOUT_MS", "60000")
            .current_dir(self.dir.path());
        if let Some(url) = &self.store_url {
            cmd.env("SWARM_STORE_URL", url);
        }
        if self.password == Some(Password::Variable) {
            cmd.env("PGPASSWORD", swarm_store_pg::testing::TEAM_PASSWORD);
        }
        cmd
    }

    pub fn swarm(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(SWARM);
        cmd.args(args);
        cmd
    }

    /// Runs `swarm ARGS` to completion.
    #[must_use = "assert the outcome with .success() or .failure(code)"]
    pub fn run(&self, args: &[&str]) -> Run {
        run(&mut self.swarm(args))
    }

    pub fn stress(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(STRESS);
        cmd.args(args);
        cmd
    }

    /// insta settings whose filters replace what differs from run to run in a command's
    /// output: this test's paths (`$ROOT`, `$HOME`, `$TMP`) and tmux socket (`$SOCKET`),
    /// uuids, ISO and epoch-ms times (also inside request ids), and ages in a table's
    /// column ("now", "3s ago").
    /// Pids, panes and anything else particular to one test are the test's own to redact.
    /// Use as `env.snapshot_settings().bind(|| insta::assert_snapshot!("name", text))`;
    /// a replacement is regex replacement text, so a literal `$` is written `$$`.
    pub fn snapshot_settings(&self) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        let mut paths = Vec::new();
        for (path, name) in [
            (&self.root, "$$ROOT"),
            (&self.home, "$$HOME"),
            (&self.dir.path().to_path_buf(), "$$TMP"),
        ] {
            // The canonical form first: a tool may print either.
            if let Ok(canonical) = path.canonicalize()
                && canonical != *path
            {
                paths.push((canonical, name));
            }
            paths.push((path.clone(), name));
        }
        for (path, name) in paths {
            settings.add_filter(&regex::escape(&path.display().to_string()), name);
        }
        settings.add_filter(&regex::escape(&self.tmux_socket), "$$SOCKET");
        settings.add_filter(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "[uuid]",
        );
        settings.add_filter(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[time]");
        settings.add_filter(r"\bperm-\d{13}-[0-9a-z]{7}\b", "perm-[ms]-[rand]");
        settings.add_filter(r"\b1\d{12}\b", "[ms]");
        // An age in a table's column ("now", "3s ago", "2m ago"), with the padding after
        // it, whose width follows the age's.
        settings.add_filter(r"(?m) {2}(?:now|\d+[smh] ago)$", "  [age]");
        settings.add_filter(r" {2}(?:now|\d+[smh] ago) {2,}", "  [age]  ");
        settings
    }

    /// Every path under the temp dir, relative, sorted: for "nothing was created" checks.
    pub fn tree(&self) -> Vec<String> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                out.push(p.strip_prefix(base).unwrap().display().to_string());
                if p.is_dir() {
                    walk(base, &p, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut out);
        out.sort();
        out
    }
}

impl TestEnv {
    /// What a failed test leaves to read: the end of every agent's log, and what each pane
    /// of this test's tmux server shows.
    pub fn print_evidence(&self) {
        let logs = std::fs::read_dir(self.root.join("teams"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|team| {
                std::fs::read_dir(team.path().join("logs"))
                    .into_iter()
                    .flatten()
            })
            .flatten();
        for log in logs {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!("--- {} (last 40 lines)", log.path().display());
            for line in &lines[lines.len().saturating_sub(40)..] {
                eprintln!("  {line}");
            }
        }
        let tmux = |args: &[&str]| {
            self.tmux_cmd()
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        let panes = tmux(&[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{session_name}:#{window_index} #{pane_title} dead=#{pane_dead} #{pane_dead_status}",
        ]);
        for pane in panes.lines() {
            let id = pane.split(' ').next().unwrap_or_default();
            eprintln!("--- pane {pane}");
            let text = tmux(&["capture-pane", "-p", "-t", id, "-S", "-40"]);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                eprintln!("  {line}");
            }
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.print_evidence();
            self.dir.disable_cleanup(true);
            eprintln!(
                "--- the test's files are kept in {}",
                self.dir.path().display()
            );
        }
        // Kill only our own tmux server, if a test started one.
        let _ = self
            .tmux_cmd()
            .arg("kill-server")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_file(self.tmux_socket_path());
    }
}

/// Where the tmux server `-L socket` of a process without `TMUX_TMPDIR` listens.
/// Runs each named test function (`fn name(backend: Backend)`) once on each backend, as
/// `on_files::name` and `on_postgres::name`: one body, so the backends cannot drift apart.
macro_rules! on_every_backend {
    ($($test:ident),+ $(,)?) => {
        mod on_files {
            $(#[test]
            fn $test() {
                super::$test($crate::harness::Backend::Files)
            })+
        }
        mod on_postgres {
            $(#[test]
            fn $test() {
                super::$test($crate::harness::Backend::Postgres)
            })+
        }
    };
}
pub(crate) use on_every_backend;

pub fn tmux_socket_path(socket: &str) -> PathBuf {
    PathBuf::from(format!("/tmp/tmux-{}/{socket}", nix::unistd::getuid()))
}

/// Whether this test can use `what`, which `available` says is here. Under `CI=true` a
/// missing one fails the test, since `.ci/run` installs everything the tests need;
/// elsewhere the test prints that it was SKIPPED (and why) and should return at once.
#[track_caller]
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    assert!(
        !swarm_util::environment::in_ci(),
        "{what} is missing, and under CI=true nothing may be skipped (.ci/run installs it)"
    );
    eprintln!("SKIPPED: {what} is missing; this test did not run");
    false
}

/// Whether `program` runs here (`program --version` exits, whatever its status).
pub fn have_program(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn success(self) -> Run {
        assert!(
            self.status.success(),
            "expected success, got {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn failure(self, code: i32) -> Run {
        assert_eq!(
            self.status.code(),
            Some(code),
            "wrong exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs a command with the default timeout, capturing its output.
#[must_use = "assert the outcome with .success() or .failure(code)"]
pub fn run(cmd: &mut Command) -> Run {
    run_timeout(cmd, COMMAND_TIMEOUT)
}

#[must_use = "assert the outcome with .success() or .failure(code)"]
pub fn run_timeout(cmd: &mut Command, timeout: Duration) -> Run {
    let out_dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().expect("spawn");
    let status = wait_timeout(&mut child, timeout)
        .unwrap_or_else(|| panic!("command timed out after {timeout:?}: {cmd:?}"));
    Run {
        status,
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
    }
}

/// Waits for a child up to `timeout`; kills it and returns None on timeout.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls `cond` until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// A scripted model server running in this test process, on its own runtime thread.
pub struct ScriptedModel {
    pub server: Option<swarm_model_server::ModelServer>,
    pub runtime: tokio::runtime::Runtime,
}

impl ScriptedModel {
    /// A model whose lead creates one task at its first turn (so its run does not end for
    /// want of a team) and answers everything else with "ok".
    pub fn lead_with_one_task(subject: &str) -> ScriptedModel {
        use swarm_model_server::{Reply, Rule, Script};
        ScriptedModel::start(
            Script::new()
                .rule(
                    Rule::new("plan")
                        .user_contains("Goal:")
                        .times(1)
                        .reply(Reply::tool(
                            "TaskCreate",
                            serde_json::json!({"subject": subject, "description": subject}),
                        )),
                )
                .default_reply(Reply::text("ok")),
        )
    }

    /// The scripted model on the lead's side of a simulated host's link (`gateway`), where
    /// teammates on the simulated hosts reach it.
    pub fn start_on_link(script: swarm_model_server::Script, gateway: &str) -> ScriptedModel {
        let addr = format!("{gateway}:0").parse().unwrap();
        ScriptedModel::serve(swarm_model_server::ModelServer::start_on_link(script, addr))
    }

    pub fn start(script: swarm_model_server::Script) -> ScriptedModel {
        ScriptedModel::serve(swarm_model_server::ModelServer::start_local(script))
    }

    /// `starting` (a server's start) on a runtime of its own.
    fn serve(
        starting: impl std::future::Future<
            Output = swarm_util::error::Result<swarm_model_server::ModelServer>,
        >,
    ) -> ScriptedModel {
        swarm_llm::install_crypto_provider();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime
            .block_on(starting)
            .expect("start the scripted model server");
        ScriptedModel {
            server: Some(server),
            runtime,
        }
    }

    /// alice takes `delay_ms` to finish task 1 (her first turn), bob finishes it at once;
    /// both say "Done." after: the script of the tests where alice is lost while she works.
    pub fn slow_alice_quick_bob(delay_ms: u64) -> swarm_model_server::Script {
        use swarm_model_server::{Reply, Rule, Script};
        let finish = Reply::tool(
            "TaskUpdate",
            serde_json::json!({"taskId": "1", "status": "completed"}),
        );
        let rest = |agent: &str| {
            Rule::new(format!("{agent}-rest"))
                .agent(agent)
                .reply(Reply::text("Done."))
        };
        Script::new()
            .rule(
                Rule::new("alice-slow")
                    .agent("alice")
                    .no_tool_result(true)
                    .delay_ms(delay_ms)
                    .reply(finish.clone()),
            )
            .rule(rest("alice"))
            .rule(
                Rule::new("bob-task")
                    .agent("bob")
                    .no_tool_result(true)
                    .reply(finish),
            )
            .rule(rest("bob"))
    }

    pub fn url(&self) -> String {
        self.server.as_ref().unwrap().url()
    }

    pub fn requests(&self) -> Vec<swarm_model_server::RecordedRequest> {
        self.server.as_ref().unwrap().requests()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// A child process killed (and reaped) when the test ends, however it ends.
pub struct Guarded(pub Option<Child>);

impl Guarded {
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// Waits up to `timeout` for it to exit (and leaves it running if it does not).
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.0.as_mut()?.try_wait().unwrap() {
                self.0 = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn is_running(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl TestEnv {
    /// `swarm run <goal>` of team `t` on `model`, unattached, its output discarded; stopped
    /// when the guard drops.
    pub fn run_team(&self, goal: &str, model: &ScriptedModel) -> Guarded {
        let mut cmd = self.swarm(&[
            "run",
            goal,
            "--team",
            "t",
            "--no-attach",
            "--provider",
            "scripted",
            "--base-url",
        ]);
        cmd.arg(model.url())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Guarded(Some(cmd.spawn().unwrap()))
    }

    /// Starts `swarm teammate` for `name` against a scripted model, output to a file.
    pub fn teammate(
        &self,
        team: &str,
        name: &str,
        model_url: &str,
        extra: &[&str],
    ) -> (Guarded, PathBuf) {
        let out = self.dir.path().join(format!("{name}.out"));
        let work = self.dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut cmd = self.swarm(&[
            "teammate",
            "--agent-id",
            &format!("{name}@{team}"),
            "--agent-name",
            name,
            "--team-name",
            team,
            "--provider",
            "scripted",
            "--base-url",
            model_url,
            "--cwd",
            &work.display().to_string(),
        ]);
        cmd.args(extra)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(self.dir.path().join(format!("{name}.err"))).unwrap());
        (Guarded(Some(cmd.spawn().unwrap())), out)
    }

    /// `swarm status --json` of `team`, judging heartbeats with a timeout of `timeout_ms`.
    pub fn status_json(&self, team: &str, timeout_ms: u64) -> serde_json::Value {
        let out = run(self
            .swarm(&["--team", team, "status", "--json"])
            .env("SWARM_HEARTBEAT_TIMEOUT_MS", timeout_ms.to_string()))
        .success();
        serde_json::from_str(&out.stdout).unwrap()
    }

    /// The lead's inbox, parsed.
    pub fn lead_inbox(&self, team: &str) -> Vec<swarm_store::mailbox::Envelope> {
        let root = self.teams();
        let team = self.team_name(team);
        root.open(&team)
            .unwrap()
            .mail()
            .read_all(&swarm_util::names::AgentName::lead())
            .unwrap()
            .into_iter()
            .map(|d| d.envelope)
            .collect()
    }

    /// Waits for a protocol message of `kind` in the lead's inbox.
    pub fn wait_for_lead_message(
        &self,
        team: &str,
        timeout: Duration,
        mut pred: impl FnMut(&swarm_store::protocol::Protocol) -> bool,
    ) -> Option<swarm_store::protocol::Protocol> {
        let mut found = None;
        wait_until(timeout, || {
            found = self
                .lead_inbox(team)
                .iter()
                .filter_map(|e| e.protocol())
                .find(|p| pred(p));
            found.is_some()
        });
        found
    }

    /// Sends `message` to `to` as `from`, through the library, as a person's CLI would: in
    /// the lead's name it is signed with the team's lead key (`swarm_store::lead_key`).
    pub fn deliver(&self, team: &str, from: &str, to: &str, text: String) {
        let root = self.teams().signing_as_lead();
        let team = self.team_name(team);
        root.open(&team)
            .unwrap()
            .mail()
            .deliver(
                &swarm_util::names::AgentName::parse_any(to).unwrap(),
                swarm_store::mailbox::Envelope::new(from, text),
            )
            .unwrap();
    }
}

impl TestEnv {
    /// Whether a message to `agent` whose text contains `needle` was taken and acknowledged:
    /// gone from its inbox, in its delivered log.
    pub fn acknowledged(&self, team: &str, agent: &str, needle: &str) -> bool {
        let (root, team) = (self.teams(), self.team_name(team));
        let agent = swarm_util::names::AgentName::parse_any(agent).unwrap();
        let live = root.open(&team).unwrap().mail().read_all(&agent).unwrap();
        let delivered = root
            .open(&team)
            .unwrap()
            .mail()
            .read_delivered(&agent)
            .unwrap();
        !live.iter().any(|d| d.envelope.text.contains(needle))
            && delivered.iter().any(|e| e.text.contains(needle))
    }

    /// The positive sign a negative check waits for: sends `agent` (a swarm teammate or a
    /// lead with a goal) a message its runtime drops on sight, a protocol message naming
    /// another sender than its envelope, and waits until it is acknowledged. Everything
    /// delivered before it was then read; called twice, a whole round of the agent's loop
    /// ran in between (the second marker is read on a later pass than the first).
    #[track_caller]
    pub fn wait_read_past(&self, team: &str, agent: &str) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let marker = format!("read-past-marker-{}", N.fetch_add(1, Ordering::Relaxed));
        let forged = swarm_store::protocol::Protocol::IdleNotification(
            swarm_store::protocol::IdleNotification {
                from: "nobody".into(),
                timestamp: swarm_util::clock::now_iso(),
                idle_reason: None,
                summary: Some(marker.clone()),
                completed_task_id: None,
                completed_status: None,
                failure_reason: None,
                result: None,
            },
        );
        self.deliver(team, "swarm-test", agent, forged.to_text());
        assert!(
            wait_until(COMMAND_TIMEOUT, || self.acknowledged(team, agent, &marker)),
            "{agent} never read its inbox past {marker}"
        );
    }

    /// Sends `signal` to the process whose pid `agent`'s state file records, after checking
    /// that the process under that pid is the one that wrote it (its start time), so a
    /// reused pid is never signalled. Returns the pid.
    #[track_caller]
    pub fn signal_agent(&self, team: &str, agent: &str, signal: nix::sys::signal::Signal) -> i32 {
        let state = self
            .teams()
            .open(&self.team_name(team))
            .unwrap()
            .agents()
            .read_state(&swarm_util::names::AgentName::parse_any(agent).unwrap())
            .unwrap_or_else(|| panic!("{agent} has no state file"));
        signal_recorded(state.pid, state.start_ticks, signal);
        state.pid
    }
}

/// Sends `signal` to `pid`, read from a file with the process's start time `start_ticks`
/// (`util::process::start_ticks`), only if the process under that pid started then.
#[track_caller]
pub fn signal_recorded(pid: i32, start_ticks: Option<u64>, signal: nix::sys::signal::Signal) {
    let now = swarm_util::process::start_ticks(pid);
    assert!(
        start_ticks.is_some() && now == start_ticks,
        "pid {pid} was recorded with start time {start_ticks:?}, and the process under it started at {now:?}: not signalling it"
    );
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
}

/// Runs git in `dir` with no user or system configuration; panics if it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=swarm test",
            "-c",
            "user.email=test@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl TestEnv {
    /// A git repository with one commit, at `<tmp>/<name>`.
    pub fn repo(&self, name: &str) -> PathBuf {
        let repo = self.dir.path().join(name);
        std::fs::create_dir_all(repo.join("src")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "# test repo\n").unwrap();
        std::fs::write(repo.join("src/lib.rs"), "// lib\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        repo
    }
}

/// The texts in `agent`'s inbox file as it is on disk (which must parse: that is part of
/// what tests check), oldest first; none if there is no inbox yet.
pub fn inbox_texts(env: &TestEnv, team: &str, agent: &str) -> Vec<String> {
    let path = env.root.join(format!("teams/{team}/inboxes/{agent}.json"));
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let inbox: serde_json::Value = serde_json::from_slice(&bytes).expect("inbox parses");
    inbox
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Held by each test that starts dozens of processes, so that under `cargo test` (one
/// process, a thread per test) two of them never share CI's two cores; nextest runs each
/// test in a process of its own and keeps them apart with its `heavy` test group.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Member `name` of a `swarm status --json` (null when it is not there).
pub fn member_json(status: &serde_json::Value, name: &str) -> serde_json::Value {
    status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == name)
        .cloned()
        .unwrap_or_default()
}

/// Writes `text` to `path`, readable by its owner only (as a password file must be).
pub fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The value of `key` in a `key=value` database URL (as the test servers give them).
pub fn url_setting(url: &str, key: &str) -> String {
    url.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {url}"))
        .to_owned()
}
