//! A real PostgreSQL server for tests (this crate's contract suite and the binary's
//! integration tests, behind the `testing` feature): one per test binary (process),
//! started on first use, and a fresh database per test ([`database`]).
//!
//! The server is Debian's `postgres` (found beside `initdb` on the PATH, or under
//! `/usr/lib/postgresql/*/bin`), initialised into a temporary directory, listening on a
//! Unix socket in that directory (trusted: the contract suite's, and the tests' own
//! administration) and on 127.0.0.1, where it asks every role for its password
//! (scram-sha-256), as a server set up for a team would: [`team_database`] is reached
//! there, as [`TEAM_ROLE`], and the tests give [`TEAM_PASSWORD`] the ways the README
//! names (`PGPASSWORD`, a password file). It runs as the `postgres`
//! user when the tests run as root (postgres refuses root), through `setpriv`, in a clean
//! environment (no API keys, no `PG*` settings). It is started by `setpriv --pdeathsig QUIT`
//! from a thread that lives as long as the server, so when the test binary ends, however
//! it ends (a panic, SIGKILL), the kernel sends the postmaster SIGQUIT: an immediate
//! shutdown, its backends with it. The directory outlives it and is removed by the next
//! test binary that starts a server (every `swarm-pg-<pid>-*` whose process is gone).
//!
//! Where there is no PostgreSQL, [`database`] returns `None` after saying so loudly, and
//! panics under `CI=true` (`.ci/run` installs the package), as the integration tests'
//! `harness::require` does.

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Server {
    socket_dir: PathBuf,
    port: u16,
    tls: Option<Tls>,
}

/// The server's TLS, on 127.0.0.1: its certificate names `localhost` only.
#[derive(Clone)]
pub struct Tls {
    pub port: u16,
    /// The root that signed the server's certificate.
    pub ca: PathBuf,
    /// A root that did not.
    pub other_ca: PathBuf,
}

/// The server's TLS; `None` (said loudly) without PostgreSQL or `openssl`.
pub fn tls() -> Option<Tls> {
    let server = SERVER.get_or_init(start).as_ref()?;
    require(
        "openssl (for the server's certificates)",
        server.tls.is_some(),
    );
    server.tls.clone()
}

static SERVER: OnceLock<Option<Server>> = OnceLock::new();

/// The one role the server asks for a password over its socket too (scram-sha-256).
pub const PASSWORD_ROLE: &str = "swarm_pw";

/// The role a team's processes connect as over TCP, and its password, which no URL holds.
pub const TEAM_ROLE: &str = "swarm";
pub const TEAM_PASSWORD: &str = "team-Pw-4821";

/// A new, empty database as a team's users reach it: over TCP at 127.0.0.1, as
/// [`TEAM_ROLE`] (its owner), which the server asks for [`TEAM_PASSWORD`]; the URL holds no
/// password. `None` (said loudly) where PostgreSQL is not installed.
pub fn team_database() -> Option<String> {
    let server = SERVER.get_or_init(start).as_ref()?;
    let name = new_database(server, TEAM_ROLE);
    Some(format!(
        "host=127.0.0.1 port={} user={TEAM_ROLE} dbname={name}",
        server.port
    ))
}

/// A password file (`host:port:database:user:password`) that gives [`TEAM_PASSWORD`] for
/// every database of the test server, as a user would write `~/.pgpass`; write it 0600.
pub fn password_file_line() -> Option<String> {
    let server = SERVER.get_or_init(start).as_ref()?;
    Some(format!(
        "127.0.0.1:{}:*:{TEAM_ROLE}:{TEAM_PASSWORD}\n",
        server.port
    ))
}

/// Makes a new database on `server`, owned by `owner`; its name.
fn new_database(server: &Server, owner: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = postgres::Client::connect(&server.url("postgres"), postgres::NoTls)
        .expect("connect to the test server");
    admin
        .batch_execute(&format!("CREATE DATABASE {name} OWNER {owner}"))
        .expect("create a test database");
    name
}

/// The URL of a new, empty database on the test binary's server; `None` (said loudly)
/// where PostgreSQL is not installed.
pub fn database() -> Option<String> {
    let server = SERVER.get_or_init(start).as_ref()?;
    let name = new_database(server, "postgres");
    Some(server.url(&name))
}

/// A database role of a host's own: a member of `swarm_host` (made with it on first use),
/// asked for its own password over TCP as every role is. What an administrator makes
/// once per host from what `swarm host add --db-role` prints.
#[derive(Debug, Clone)]
pub struct HostRole {
    pub name: String,
    pub password: String,
}

/// A new host role `<label>_<pid>_<n>` on the test binary's server; `None` (said loudly)
/// where PostgreSQL is not installed.
pub fn host_role(label: &str) -> Option<HostRole> {
    let server = SERVER.get_or_init(start).as_ref()?;
    Some(make_host_role(&server.url("postgres"), label))
}

/// Makes a host role on the server `admin_url` reaches as its superuser.
fn make_host_role(admin_url: &str, label: &str) -> HostRole {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static GROUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let name = format!(
        "{label}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let password = format!("{name}-Pw-77");
    let mut admin =
        postgres::Client::connect(admin_url, postgres::NoTls).expect("connect to the test server");
    {
        let _one = GROUP.lock().unwrap_or_else(|p| p.into_inner());
        let exists: bool = admin
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'swarm_host')",
                &[],
            )
            .expect("look for swarm_host")
            .get(0);
        if !exists {
            admin
                .batch_execute("CREATE ROLE swarm_host NOLOGIN")
                .expect("make swarm_host");
        }
    }
    admin
        .batch_execute(&format!(
            "CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE swarm_host"
        ))
        .expect("make a host role");
    HostRole { name, password }
}

impl Server {
    fn url(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={dbname}",
            self.socket_dir.display(),
            self.port
        )
    }
}

/// Fails under `CI=true`, where nothing may be skipped; says loudly that the test did not
/// run otherwise.
fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    assert!(
        !swarm_util::environment::in_ci(),
        "{what} is missing, and under CI=true nothing may be skipped (.ci/run installs it)"
    );
    eprintln!("SKIPPED: {what} is missing; this test did not run on PostgreSQL");
    false
}

/// The directory of `initdb` and `postgres`: beside `initdb` on the PATH (followed through
/// symlinks), else the newest `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os(swarm_util::vars::PATH).and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("initdb"))
            .find(|p| p.is_file())
    });
    let from_path = on_path
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let installed = || {
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .filter_map(|e| {
                let version = e.file_name().to_str()?.parse().ok()?;
                Some((version, e.path().join("bin")))
            })
            .collect();
        versions.sort();
        versions.pop().map(|(_, bin)| bin)
    };
    from_path
        .or_else(installed)
        .filter(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
}

/// The command `program` runs as: the `postgres` user under root, else ourselves; always
/// with a clean environment and, for the server, a parent-death signal.
fn command(bin: &Path, program: &str, as_postgres: bool, pdeathsig: bool) -> Command {
    let mut cmd = Command::new("setpriv");
    if as_postgres {
        cmd.args(["--reuid=postgres", "--regid=postgres", "--clear-groups"]);
    }
    if pdeathsig {
        cmd.arg("--pdeathsig=QUIT");
    }
    cmd.arg("--").arg(bin.join(program));
    cmd.env_clear()
        .env(swarm_util::vars::PATH, "/usr/bin:/bin")
        .env(swarm_util::vars::LC_ALL, "C")
        .stdin(Stdio::null());
    cmd
}

fn start() -> Option<Server> {
    let bin = bin_dir();
    if !require("PostgreSQL (initdb and postgres)", bin.is_some()) {
        return None;
    }
    let bin = bin.expect("checked above");
    sweep_stale_dirs();
    let (dir, as_postgres) = server_dir();
    let data = init_data(&bin, &dir, as_postgres);
    // Over the socket, one role must give a password (the password-file test's); everyone
    // else is trusted there. Over TCP, everyone gives a password.
    let hba = data.join("pg_hba.conf");
    let rest = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
    let rest: String = rest
        .lines()
        .filter(|l| !l.trim_start().starts_with("host"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        &hba,
        format!(
            "local all {PASSWORD_ROLE} scram-sha-256\n{rest}host all all 127.0.0.1/32 scram-sha-256\n"
        ),
    )
    .expect("write pg_hba.conf");
    // A free port (the kernel's pick, released for the server): it listens on loopback
    // too, where a team's processes connect (with TLS when `openssl` made certificates).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("find a free port")
        .port();
    let certs = make_certs(&dir, as_postgres, "DNS:localhost");
    let log = std::fs::File::create(dir.join("server.log")).expect("create the server log");
    let mut server = command(&bin, "postgres", as_postgres, true);
    server
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&dir)
        .args(["-p", &port.to_string()])
        .args(match &certs {
            Some(_) => vec![
                "-c".to_owned(),
                "listen_addresses=127.0.0.1".to_owned(),
                "-c".to_owned(),
                "ssl=on".to_owned(),
                "-c".to_owned(),
                format!("ssl_cert_file={}", dir.join("server.crt").display()),
                "-c".to_owned(),
                format!("ssl_key_file={}", dir.join("server.key").display()),
            ],
            None => vec!["-c".to_owned(), "listen_addresses=127.0.0.1".to_owned()],
        })
        .args(["-c", "fsync=off"])
        .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        .args(["-c", "max_connections=200"])
        .stdout(log.try_clone().expect("share the server log"))
        .stderr(log);
    spawn_postgres(server);
    let server = Server {
        socket_dir: dir.clone(),
        port,
        tls: certs.map(|()| Tls {
            port,
            ca: dir.join("ca.crt"),
            other_ca: dir.join("other-ca.crt"),
        }),
    };
    wait_ready(&server, &dir);
    let mut admin = postgres::Client::connect(&server.url("postgres"), postgres::NoTls)
        .expect("connect to the test server");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {TEAM_ROLE} LOGIN PASSWORD '{TEAM_PASSWORD}'"
        ))
        .expect("make the team role");
    Some(server)
}

/// A directory for a server, owned by the user it runs as (`postgres` under root); the
/// next test binary's sweep removes it once this process is gone.
fn server_dir() -> (PathBuf, bool) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("swarm-pg-{}-", std::process::id()))
        .tempdir()
        .expect("make the server's directory")
        .keep();
    let as_postgres = nix::unistd::geteuid().is_root();
    if as_postgres {
        let user = nix::unistd::User::from_name("postgres")
            .expect("look up the postgres user")
            .expect("a postgres user (Debian's postgresql package makes it)");
        chown(&dir, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .expect("give the server's directory to postgres");
    }
    (dir, as_postgres)
}

/// `initdb` into `dir/data`, trusting local connections; returns the data directory.
fn init_data(bin: &Path, dir: &Path, as_postgres: bool) -> PathBuf {
    let data = dir.join("data");
    let init = command(bin, "initdb", as_postgres, false)
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"])
        .args(["--no-sync", "--no-instructions"])
        .output()
        .expect("run initdb");
    assert!(
        init.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    data
}

/// Starts `server` (a `postgres` command) from a thread that waits on it, its parent for
/// the parent-death signal: it ends with the server or with the process. Returns its pid
/// (`setpriv` execs the server, so it is the postmaster's).
fn spawn_postgres(mut server: Command) -> u32 {
    let (started, pid) = std::sync::mpsc::channel();
    std::thread::spawn(move || match server.spawn() {
        Ok(mut child) => {
            let _ = started.send(Ok(child.id()));
            let _ = child.wait();
        }
        Err(e) => {
            let _ = started.send(Err(e));
        }
    });
    pid.recv()
        .expect("the server thread answers")
        .expect("start postgres")
}

/// A server of one test's own, with the settings that make a commit durable (fsync and
/// synchronous commit, PostgreSQL's defaults), which the test can crash (an immediate
/// shutdown: no checkpoint, crash recovery at the next start) and start again, for the
/// restart faults. Stopped when dropped.
pub struct Private {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
    pid: std::sync::Mutex<Option<u32>>,
    /// The addresses it listens on besides its socket (see [`Private::start_on`]).
    listen: Vec<String>,
    /// It made certificates for them, and speaks TLS there.
    tls: bool,
}

impl Private {
    /// `None` (said loudly; a failure under `CI=true`) without PostgreSQL.
    pub fn start() -> Option<Private> {
        Private::start_on(&[])
    }

    /// A private server that also listens on these TCP addresses (the lead's side of
    /// simulated hosts' links), where it asks [`TEAM_ROLE`] for [`TEAM_PASSWORD`], as a
    /// team's server would, and offers TLS with a certificate naming them, signed by
    /// [`Private::ca`].
    pub fn start_on(addresses: &[&str]) -> Option<Private> {
        let bin = bin_dir();
        if !require("PostgreSQL (initdb and postgres)", bin.is_some()) {
            return None;
        }
        sweep_stale_dirs();
        let (dir, as_postgres) = server_dir();
        let bin = bin.expect("checked above");
        let data = init_data(&bin, &dir, as_postgres);
        let mut tls = false;
        if !addresses.is_empty() {
            let hba = data.join("pg_hba.conf");
            let rules = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
            std::fs::write(
                &hba,
                format!("{rules}\nhost all all 10.0.0.0/8 scram-sha-256\n"),
            )
            .expect("write pg_hba.conf");
            let names: Vec<String> = addresses.iter().map(|a| format!("IP:{a}")).collect();
            tls = make_certs(&dir, as_postgres, &names.join(",")).is_some();
            require("openssl (for the server's certificates)", tls);
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("find a free port")
            .port();
        let server = Private {
            bin,
            dir,
            port,
            as_postgres,
            pid: std::sync::Mutex::new(None),
            listen: addresses.iter().map(|a| (*a).to_owned()).collect(),
            tls,
        };
        server.run();
        if !addresses.is_empty() {
            let mut admin = postgres::Client::connect(&server.url("postgres"), postgres::NoTls)
                .expect("connect to the private server");
            for sql in [
                format!("CREATE ROLE {TEAM_ROLE} LOGIN PASSWORD '{TEAM_PASSWORD}'"),
                format!("CREATE DATABASE team OWNER {TEAM_ROLE}"),
            ] {
                admin
                    .batch_execute(&sql)
                    .expect("make the team role and database");
            }
        }
        Some(server)
    }

    /// A new role of a host's own on it (see [`host_role`]).
    pub fn host_role(&self, label: &str) -> HostRole {
        make_host_role(&self.url("postgres"), label)
    }

    /// The root that signed its certificate (see [`Private::start_on`]).
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The URL of database `dbname` on it.
    pub fn url(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={dbname}",
            self.dir.display(),
            self.port
        )
    }

    /// The URL of its database `team` over TCP at `address`, one of
    /// [`Private::start_on`]'s, as [`TEAM_ROLE`], without a password: TLS as libpq's
    /// default (`prefer`) unless `sslmode` is given.
    pub fn url_at(&self, address: &str, sslmode: Option<&str>) -> String {
        let mode = sslmode.map(|m| format!(" sslmode={m}")).unwrap_or_default();
        format!(
            "host={address} port={} user={TEAM_ROLE} dbname=team{mode}",
            self.port
        )
    }

    /// A password file's line for its team role on `address`.
    pub fn password_line(&self, address: &str) -> String {
        format!("{address}:{}:*:{TEAM_ROLE}:{TEAM_PASSWORD}\n", self.port)
    }

    /// A password file's line for host role `role` on `address`.
    pub fn password_line_for(&self, address: &str, role: &HostRole) -> String {
        format!(
            "{address}:{}:*:{}:{}\n",
            self.port, role.name, role.password
        )
    }

    /// Starts it (again), and waits until it takes connections.
    pub fn run(&self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("open the server log");
        let mut server = command(&self.bin, "postgres", self.as_postgres, true);
        server
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-k")
            .arg(&self.dir)
            .args(["-p", &self.port.to_string(), "-c"])
            .arg(format!("listen_addresses={}", self.listen.join(",")))
            .args(match self.tls {
                true => vec![
                    "-c".to_owned(),
                    "ssl=on".to_owned(),
                    "-c".to_owned(),
                    format!("ssl_cert_file={}", self.dir.join("server.crt").display()),
                    "-c".to_owned(),
                    format!("ssl_key_file={}", self.dir.join("server.key").display()),
                ],
                false => Vec::new(),
            })
            .stdout(log.try_clone().expect("share the server log"))
            .stderr(log);
        *self.pid.lock().unwrap() = Some(spawn_postgres(server));
        wait_until_ready(&self.url("postgres"), &self.dir);
    }

    /// An immediate shutdown (what a crash leaves: nothing flushed that was not committed),
    /// waited for.
    pub fn crash(&self) {
        let Some(pid) = self.pid.lock().unwrap().take() else {
            return;
        };
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGQUIT);
        let deadline = Instant::now() + Duration::from_secs(30);
        while nix::sys::signal::kill(pid, None).is_ok() {
            assert!(
                Instant::now() < deadline,
                "postgres did not stop within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        self.crash();
    }
}

/// A root, another root, and a certificate for the names `san` lists (`subjectAltName`'s
/// form, `DNS:localhost,IP:10.1.2.1`) signed by the first, made with `openssl` into `dir`
/// (the key readable by the server only); `None` without `openssl`.
fn make_certs(dir: &Path, as_postgres: bool, san: &str) -> Option<()> {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output();
        out.is_ok_and(|o| o.status.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let root = |name: &str, cn: &str| {
        let (key, crt, subj) = (
            format!("{name}.key"),
            format!("{name}.crt"),
            format!("/CN={cn}"),
        );
        let mut args = vec![
            "req", "-x509", "-days", "2", "-subj", &subj, "-keyout", &key, "-out", &crt,
        ];
        args.extend(ec);
        openssl(&args)
    };
    let mut csr = vec![
        "req",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ];
    csr.extend(ec);
    std::fs::write(dir.join("san.cnf"), format!("subjectAltName={san}\n")).ok()?;
    let made = root("ca", "swarm test root")
        && root("other-ca", "another root")
        && openssl(&csr)
        && openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.cnf",
            "-out",
            "server.crt",
        ]);
    if !made {
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    let key = dir.join("server.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).ok()?;
    if as_postgres {
        let user = nix::unistd::User::from_name("postgres").ok()??;
        for f in ["server.key", "server.crt"] {
            chown(
                dir.join(f),
                Some(user.uid.as_raw()),
                Some(user.gid.as_raw()),
            )
            .ok()?;
        }
    }
    Some(())
}

fn wait_ready(server: &Server, dir: &Path) {
    wait_until_ready(&server.url("postgres"), dir);
}

fn wait_until_ready(url: &str, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match postgres::Client::connect(url, postgres::NoTls) {
            Ok(_) => return,
            Err(e) if Instant::now() > deadline => panic!(
                "postgres did not accept connections within 30 s ({e}); its log:\n{}",
                std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
            ),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Removes the directories of servers whose test binary is gone.
fn sweep_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("swarm-pg-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
