//! Connections to a team's database: the settings parsed once from its URL, a small pool of
//! clients (each used by one thread at a time, given back after), and the mapping of the
//! driver's failures onto swarm's errors.
//!
//! Invariants:
//! - a password never reaches a message or a log: the server is named by [`Database::at`]
//!   (hosts, port, database, user) and URLs are shown only through [`redact`];
//! - a failure to reach or talk to the server is [`Error::Unavailable`] (exit code 11), one
//!   lowercase line naming the server; a lock of the database not had within the lock
//!   timeout is the same, and so is a role that lacks a privilege swarm needs;
//! - a server found away (refusing connections, its socket gone, starting up or shutting
//!   down, a connection reset: see `away`) is waited for, up to [`OUTAGE_WAIT`] per call,
//!   when it is known to run there: this process reached it before, or the team's pointer
//!   names it ([`Database::expected`]); a connection not made is always tried again (nothing
//!   was sent), a transaction lost with its connection only as below. Anything else (a
//!   server never reached at a URL a person gave, a name that does not resolve, a refused
//!   password or role) is said at once;
//! - a transaction is retried on a fresh connection where the caller says its work is
//!   idempotent ([`Retry::Safe`]: running it twice leaves what running it once does), or
//!   where its work may run again and it certainly did not commit
//!   ([`Retry::BeforeCommit`]: the connection failed before the commit was sent, or the
//!   server rolled it back for a serialization failure or a deadlock), so a retry after a
//!   dropped connection never makes a second copy of anything;
//! - every wait is bounded: connecting (5 s unless the URL says otherwise), a statement
//!   (`statement_timeout`) and a lock (`lock_timeout`).

use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::config::Host;
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{libpq, tls};
use swarm_store::error::{Error, Result};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;

/// How long a lock of the database (a row's, a hold's) is waited for before the operation
/// fails, unless the database was opened with another ([`Database::with_lock_timeout`]).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one statement may run.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long connecting may take, unless the URL sets `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a connection may sit silent before the first probe, between probes, and how
/// many unanswered probes end it: a dead peer is found within about 25 s.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent data may stay unacknowledged before the connection is given up.
const UNACKNOWLEDGED: Duration = Duration::from_secs(30);
/// Tries of one transaction that may be retried (see [`Retry`]).
const TRIES: u32 = 4;
/// How long one call waits for a server known to run there (reached before by this process,
/// or named by the team's pointer) that it finds away (a restart, a failover), trying again
/// with a growing pause, before it fails with [`Error::Unavailable`]; a longer outage is
/// its caller's to wait out (an agent's loop does, and says so).
pub const OUTAGE_WAIT: Duration = swarm_store::layout::DEFAULT_OUTAGE_WAIT;

/// Whether a transaction may run again after its connection failed mid-way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Running it twice leaves what running it once does: retried on a fresh connection.
    Safe,
    /// Not idempotent (it makes something new), but its work may run again: retried when
    /// it did not commit (the connection failed before the commit was sent, or the server
    /// says it rolled back). A commit whose answer was lost is settled by asking the server
    /// for the transaction's status (`txid_status`); only when the server cannot tell is
    /// it the caller's error.
    BeforeCommit,
    /// Not idempotent, and it calls the caller's closure (once): any failure is the
    /// caller's error.
    Once,
}

/// Why a transaction failed: the database, swarm's own rules (a refusal to carry back), or
/// the commit itself, whose outcome is then unknown.
#[derive(Debug)]
pub enum Fail {
    Db(postgres::Error),
    Swarm(Error),
    InDoubt(postgres::Error),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Fail {
        Fail::Db(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Swarm(e)
    }
}

impl From<swarm_util::error::Error> for Fail {
    fn from(e: swarm_util::error::Error) -> Fail {
        Fail::Swarm(e.into())
    }
}

/// One database: its settings and its idle connections.
pub struct Database {
    config: Config,
    /// `None` over Unix sockets, which carry no TLS.
    tls: Option<MakeRustlsConnect>,
    at: String,
    lock_timeout: Duration,
    idle: Mutex<Vec<Client>>,
    /// This process has connected to it at least once (see [`Database::rides_out`]).
    reached: AtomicBool,
    /// A server is known to run there: the team's pointer names it (see
    /// [`Database::expected`]).
    expected: bool,
    /// How long one call waits for a server that is away (`SWARM_OUTAGE_WAIT_MS`, else
    /// [`OUTAGE_WAIT`]).
    outage_wait: Duration,
    /// The fencing token of the agent process this is, once it registered (see
    /// [`Database::fence`]).
    fence: Mutex<Option<i64>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database({})", self.at)
    }
}

impl Database {
    /// Parses `url` (a `postgres://` URL or `key=value` settings), fills in what it leaves
    /// out from `env` as `psql` would ([`libpq`]), and connects once, so a server that
    /// cannot be reached is said now. Does not migrate: see
    /// [`crate::migrate::migrate`].
    pub fn open(url: &str, env: &Environment) -> Result<Database> {
        Database::with_lock_timeout(url, env, LOCK_TIMEOUT)
    }

    /// [`Database::open`], waiting `lock_timeout` for a lock instead of [`LOCK_TIMEOUT`]
    /// (the setting a person gives, as `SWARM_LOCK_TIMEOUT_MS` is for files).
    pub fn with_lock_timeout(
        url: &str,
        env: &Environment,
        lock_timeout: Duration,
    ) -> Result<Database> {
        Database::lazy(url, env, lock_timeout)?.reach(true)
    }

    /// This database, connected to once, so a server that cannot be reached is said now.
    /// With `wait`, a server found away is waited for as every call waits for it (see
    /// `Database::rides_out`); without, one try.
    pub fn reach(self, wait: bool) -> Result<Database> {
        if wait {
            // Nothing to do but connect: `run` waits for the server as it should.
            self.run(Retry::Once, "connect to", |_| Ok(()))?;
            return Ok(self);
        }
        let client = off_runtime(|| self.take())?;
        self.give_back(client);
        Ok(self)
    }

    /// This database, with a server known to run at its URL: the team's pointer names it
    /// (the team was made there), so a server found away (see `away`) before this process
    /// ever reached it is restarting, and waited for as one reached before would be
    /// ([`OUTAGE_WAIT`]), not taken for a wrong URL. A name that does not resolve, a refused
    /// password or role are still said at once.
    pub fn expected(mut self) -> Database {
        self.expected = true;
        self
    }

    /// The database at `url`, parsed (what it leaves out filled from `env`) but not
    /// reached: its first use connects, and fails with [`Error::Unavailable`] while the
    /// server cannot be reached.
    pub fn lazy(url: &str, env: &Environment, lock_timeout: Duration) -> Result<Database> {
        check_url(url)?;
        let (rest, tls_given) = tls::take_settings(url);
        let mut config = Config::from_str(&rest).map_err(|e| {
            Error::usage(format!(
                "failed to read the store url {}: {}; use postgres://user@host:port/database",
                redact(url),
                one_line(&e.to_string())
            ))
        })?;
        libpq::fill(&mut config, env)?;
        let tls = tls::settle(&tls_given, env)?;
        let tls = tls.apply(&mut config);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("swarm");
        }
        // A connection whose other end vanished (a host cut off, a server's machine gone)
        // fails within about half a minute instead of blocking a call for TCP's quarter of
        // an hour: probes on an idle one, and a bound on data left unacknowledged.
        config
            .keepalives(true)
            .keepalives_idle(KEEPALIVE_IDLE)
            .keepalives_interval(KEEPALIVE_INTERVAL)
            .keepalives_retries(KEEPALIVE_RETRIES)
            .tcp_user_timeout(UNACKNOWLEDGED);
        Ok(Database {
            at: describe(&config),
            lock_timeout,
            config,
            tls,
            idle: Mutex::new(Vec::new()),
            reached: AtomicBool::new(false),
            expected: false,
            outage_wait: OUTAGE_WAIT,
            fence: Mutex::new(None),
        })
    }

    /// The server and database, as messages name them: hosts, port, database and user,
    /// never the password.
    pub fn at(&self) -> &str {
        &self.at
    }

    /// A new connection, set up with this database's timeouts.
    fn connect(&self) -> std::result::Result<Client, postgres::Error> {
        let mut client = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        }?;
        self.reached.store(true, Ordering::Relaxed);
        client.batch_execute(&format!(
            "SET lock_timeout = {}; SET statement_timeout = {}",
            self.lock_timeout.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        ))?;
        Ok(client)
    }

    /// A connection of the pool (or a new one), the caller's until it gives it back.
    pub(crate) fn take(&self) -> Result<Client> {
        self.try_take()
            .map_err(|e| self.unavailable("connect to", &e, false))
    }

    /// [`Database::take`], with the driver's error.
    fn try_take(&self) -> std::result::Result<Client, postgres::Error> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(c) if !c.is_closed() => Ok(c),
            _ => self.connect(),
        }
    }

    /// Returns a connection to the pool, unless it is closed.
    pub(crate) fn give_back(&self, client: Client) {
        if !client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(client);
        }
    }

    /// Runs `work` on a connection of the pool (normally one transaction), retrying it per
    /// `retry` (see [`Retry`]); `what` says what it does, for the error ("read the roster of
    /// team 'x'").
    pub fn run<T: Send>(
        &self,
        retry: Retry,
        what: &str,
        work: impl FnMut(&mut Client) -> std::result::Result<T, Fail> + Send,
    ) -> Result<T> {
        off_runtime(|| self.run_here(retry, what, work))
    }

    fn run_here<T>(
        &self,
        retry: Retry,
        what: &str,
        mut work: impl FnMut(&mut Client) -> std::result::Result<T, Fail>,
    ) -> Result<T> {
        let mut tries = 0;
        // When this call first found the server away.
        let mut away_since = None;
        loop {
            tries += 1;
            let mut client = match self.try_take() {
                Ok(c) => c,
                // Nothing was sent, so trying again makes nothing twice, whatever `retry`
                // says.
                Err(e) if self.rides_out(&mut away_since, &e) => {
                    tracing::debug!("waiting for the database: {}", cause(&e));
                    backoff(tries);
                    continue;
                }
                Err(e) if retry == Retry::Safe && tries < TRIES => {
                    tracing::debug!("retrying after a failed connection: {}", cause(&e));
                    backoff(tries);
                    continue;
                }
                Err(e) => {
                    let waited = waited_out(away_since, self.outage_wait, &e);
                    return Err(self.unavailable("connect to", &e, waited));
                }
            };
            let outcome = work(&mut client);
            self.give_back(client);
            let (e, in_doubt) = match outcome {
                Ok(v) => return Ok(v),
                Err(Fail::Swarm(e)) => return Err(e),
                Err(Fail::Db(e)) => (e, false),
                Err(Fail::InDoubt(e)) => (e, true),
            };
            let rerun = match retry {
                Retry::Safe => true,
                Retry::BeforeCommit => !in_doubt,
                Retry::Once => false,
            };
            let again = rerun
                && match kind(&e) {
                    Kind::RolledBack => tries < TRIES,
                    Kind::Connection => tries < TRIES || self.rides_out(&mut away_since, &e),
                    _ => false,
                };
            if !again {
                return Err(if waited_out(away_since, self.outage_wait, &e) {
                    self.unavailable(&format!("{what}: lost"), &e, true)
                } else {
                    self.failed(what, &e)
                });
            }
            tracing::debug!(
                "retrying after a database failure: {}",
                one_line(&e.to_string())
            );
            backoff(tries);
        }
    }

    /// Whether a call that failed with `e` waits on for the server (first found away at
    /// `away_since`, set now if not yet): only when `e` says the server is away (see
    /// `away`), only for a server known to run there (this process reached it before, or
    /// the team's pointer names it: [`Database::expected`]; one never reached at a URL a
    /// person gave is a wrong URL or a server not started, said at once), and for up to
    /// [`OUTAGE_WAIT`].
    fn rides_out(&self, away_since: &mut Option<Instant>, e: &postgres::Error) -> bool {
        (self.expected || self.reached.load(Ordering::Relaxed))
            && away(e)
            && away_since.get_or_insert_with(Instant::now).elapsed() < self.outage_wait
    }

    /// This database with calls waiting up to `wait` for a server that is away (see
    /// `Database::rides_out`; the process's `SWARM_OUTAGE_WAIT_MS`).
    pub fn waiting_out(mut self, wait: Duration) -> Database {
        self.outage_wait = wait;
        self
    }

    /// From now on, every transaction of this process on the database first checks that
    /// the process holding `token` was not declared dead, and fails with
    /// [`Error::Fenced`] if it was. The check holds its row until the commit, so a
    /// declaration of its death waits for the writes in flight and refuses every later one.
    pub(crate) fn fence(&self, token: i64) {
        *self.fence.lock().unwrap_or_else(|p| p.into_inner()) = Some(token);
    }

    /// Runs `work` in one transaction, committed when it returns `Ok` (and refused when
    /// this process was declared dead: see `Database::fence`).
    pub fn transaction<T: Send>(
        &self,
        retry: Retry,
        what: &str,
        mut work: impl FnMut(&mut postgres::Transaction<'_>) -> std::result::Result<T, Fail> + Send,
    ) -> Result<T> {
        let fence = *self.fence.lock().unwrap_or_else(|p| p.into_inner());
        self.run(retry, what, |client| {
            let mut tx = client.transaction()?;
            if let Some(token) = fence {
                check_fence(&mut tx, token, what)?;
            }
            let out = work(&mut tx)?;
            // Which transaction this is, to ask the server whether it committed if the
            // answer to the commit is lost.
            let xid: Option<i64> = match retry {
                Retry::BeforeCommit => Some(tx.query_one("SELECT txid_current()", &[])?.get(0)),
                Retry::Safe | Retry::Once => None,
            };
            match tx.commit() {
                Ok(()) => Ok(out),
                Err(e) => match xid.and_then(|xid| self.settle(xid)) {
                    Some(true) => Ok(out),
                    // Rolled back: nothing happened, so it may run again.
                    Some(false) => Err(Fail::Db(e)),
                    None => Err(Fail::InDoubt(e)),
                },
            }
        })
    }

    /// Whether transaction `xid`, whose commit's answer was lost, committed: asked of the
    /// server on a fresh connection (waiting for it as [`Database::rides_out`] says);
    /// `None` when it cannot tell.
    fn settle(&self, xid: i64) -> Option<bool> {
        let mut away_since = None;
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_take() {
                Ok(mut client) => {
                    let status = client
                        .query_one("SELECT txid_status($1)", &[&xid])
                        .ok()
                        .and_then(|row| row.get::<_, Option<String>>(0));
                    self.give_back(client);
                    tracing::debug!("a commit whose answer was lost: {status:?}");
                    return match status.as_deref() {
                        Some("committed") => Some(true),
                        Some("aborted") => Some(false),
                        _ => None,
                    };
                }
                Err(e) if self.rides_out(&mut away_since, &e) => backoff(tries),
                Err(_) => return None,
            }
        }
    }

    /// The server could not be reached (or was lost) while doing `doing`; `waited`: the
    /// call waited [`OUTAGE_WAIT`] for it, which the line says.
    fn unavailable(&self, doing: &str, e: &postgres::Error, waited: bool) -> Error {
        let waited = if waited {
            format!(
                "; it did not come back within {} s",
                self.outage_wait.as_secs_f64()
            )
        } else {
            String::new()
        };
        Error::Unavailable(format!(
            "failed to {doing} the team's database at {}: {}{waited}; check that the server runs and that the store url is right",
            self.at,
            cause(e)
        ))
    }

    /// A database failure while doing `what`, as swarm's error.
    pub(crate) fn failed(&self, what: &str, e: &postgres::Error) -> Error {
        match kind(e) {
            Kind::Connection => self.unavailable(&format!("{what}: lost"), e, false),
            Kind::LockTimeout => Error::Busy(format!(
                "failed to {what}: a lock in the team's database at {} stayed held for more than {:?}; retry",
                self.at, self.lock_timeout
            )),
            Kind::HostLimit => Error::Database(format!(
                "failed to {what} in the team's database at {}: {}; a host's role may change only its own agents' rows (see docs/design/hosts.md, \"What a host may do\")",
                self.at,
                cause(e)
            )),
            Kind::Privilege => Error::Unavailable(format!(
                "failed to {what} in the team's database at {}: {}; the role needs all rights on swarm's tables and sequences there (have the database's owner run `swarm store migrate`, then `GRANT ALL ON ALL TABLES IN SCHEMA public` and the same `ON ALL SEQUENCES` to it, or use the owner's role)",
                self.at,
                cause(e)
            )),
            Kind::RolledBack | Kind::Other => Error::Database(format!(
                "failed to {what} in the team's database at {}: {}",
                self.at,
                cause(e)
            )),
        }
    }
}

impl Drop for Database {
    /// Closing a connection blocks on the driver's own runtime: off any runtime, as
    /// `off_runtime` says.
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(|p| p.into_inner()));
        if !idle.is_empty() {
            off_runtime(move || drop(idle));
        }
    }
}

/// Runs `work`, which uses the driver, where the driver may block: the driver runs each
/// call on a small runtime of its own, which tokio refuses to start on a thread already
/// in a runtime (an agent's loop, a run's wait), so from such a thread `work` runs on a
/// thread of its own while the caller waits, as it would have for the call itself.
pub(crate) fn off_runtime<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|s| {
        s.spawn(work)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Refuses the transaction of a process declared dead; otherwise holds its row (`FOR
/// SHARE`) until the commit, so its declaration waits for this write.
fn check_fence(
    tx: &mut postgres::Transaction<'_>,
    token: i64,
    what: &str,
) -> std::result::Result<(), Fail> {
    let live = tx.query_opt(
        "SELECT 1 FROM processes WHERE token = $1 AND dead_at IS NULL FOR SHARE",
        &[&token],
    )?;
    if live.is_some() {
        return Ok(());
    }
    Err(Fail::Swarm(Error::Fenced(format!(
        "failed to {what}: this process was declared dead (its heartbeat stopped, or a newer process of its agent started), so the team's database refuses its writes; it stops"
    ))))
}

/// The wait before try `tries + 1`: 50 ms, 200 ms, 450 ms, ..., at most a second.
fn backoff(tries: u32) {
    let ms = 50 * u64::from(tries.min(5).pow(2));
    std::thread::sleep(Duration::from_millis(ms.min(1000)));
}

enum Kind {
    /// The connection failed or the server went away: the transaction's fate may be unknown.
    Connection,
    /// The server rolled the transaction back (a serialization failure, a deadlock).
    RolledBack,
    LockTimeout,
    /// The role may not do it (`insufficient_privilege`).
    Privilege,
    /// A host's role was refused a row that is not its agents' (see [`crate::rights`]).
    HostLimit,
    Other,
}

fn kind(e: &postgres::Error) -> Kind {
    let Some(code) = e.code() else {
        // No SQLSTATE: an I/O failure or a closed connection, not the server's answer.
        return Kind::Connection;
    };
    if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        Kind::RolledBack
    } else if *code == SqlState::LOCK_NOT_AVAILABLE {
        Kind::LockTimeout
    } else if code.code() == crate::rights::REFUSED
        || *code == SqlState::INSUFFICIENT_PRIVILEGE
            && e.as_db_error()
                .is_some_and(|d| d.message().contains("row-level security"))
    {
        Kind::HostLimit
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        Kind::Privilege
    } else if code.code().starts_with("08")
        || *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
    {
        Kind::Connection
    } else {
        Kind::Other
    }
}

/// Whether a call that first found the server away at `away_since` gave up waiting for it
/// (`wait` passed), failing with `e`, a sign that it is still away.
fn waited_out(away_since: Option<Instant>, wait: Duration, e: &postgres::Error) -> bool {
    away_since.is_some_and(|since| since.elapsed() >= wait) && away(e)
}

/// Whether `e` says the server is away for now, as a restart or a failover leaves it: it
/// refused the connection or reset it, its Unix socket is gone, it took too long to
/// answer, it is starting up or shutting down (`57P03`), it ended the session
/// (`57P01`, `57P02`), or the connection closed or failed (`08…`, end of file). Not: a
/// name that does not resolve, a refused password or role (`28…`), a database or
/// privilege missing, a TLS failure: none of these pass by waiting.
fn away(e: &postgres::Error) -> bool {
    use std::io::ErrorKind as Io;
    if let Some(code) = e.code() {
        return code.code().starts_with("08")
            || *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
            || *code == SqlState::CANNOT_CONNECT_NOW;
    }
    if e.is_closed() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                Io::ConnectionRefused
                    | Io::ConnectionReset
                    | Io::ConnectionAborted
                    | Io::NotConnected
                    | Io::BrokenPipe
                    | Io::UnexpectedEof
                    | Io::TimedOut
                    | Io::NotFound
                    | Io::HostUnreachable
                    | Io::NetworkUnreachable
            );
        }
        source = s.source();
    }
    false
}

/// The driver's message, on one line, with its cause: "error connecting to server:
/// connection refused (os error 111)".
fn cause(e: &postgres::Error) -> String {
    let mut text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity().to_lowercase(), db.message()),
        None => e.to_string(),
    };
    if e.as_db_error().is_none()
        && let Some(source) = std::error::Error::source(e)
    {
        let source = source.to_string();
        if !text.contains(&source) {
            text = format!("{text}: {source}");
        }
    }
    one_line(&text)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The server as messages name it: `host:port` for each host (a socket directory for a
/// Unix socket), then the database and user. Never the password.
fn describe(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| match h {
            Host::Tcp(name) => format!("{name}:{}", port(i)),
            Host::Unix(dir) => format!("{} (socket, port {})", dir.display(), port(i)),
        })
        .collect();
    if hosts.is_empty() {
        hosts.push(format!("localhost:{}", port(0)));
    }
    let mut at = hosts.join(", ");
    let user = config.get_user().unwrap_or("(default user)");
    if let Some(db) = config.get_dbname() {
        at.push_str(&format!(" (database {db}, user {user})"));
    } else {
        at.push_str(&format!(" (user {user})"));
    }
    at
}

/// Refuses a URL with a password in it, in any spelling the driver reads (see the
/// module's invariants): every URL a command is given, a pointer holds or a host is sent
/// passes here before it is used ([`Database::lazy`]).
pub fn check_url(url: &str) -> Result<()> {
    if !holds_password(url) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "failed to use the store url {}: it holds a password, which swarm would record in the team's files; give the url without it and put the password in ~/.pgpass or PGPASSWORD",
        redact(url)
    )))
}

/// `url` as it may be shown: itself when it holds no password, else the server it names
/// (`host:port (database d, user u)`), or, if it cannot be read, nothing of it. Never any
/// part of a password, in any spelling the driver takes.
pub fn redact(url: &str) -> String {
    if !holds_password(url) {
        return url.to_owned();
    }
    match Config::from_str(&tls::take_settings(url).0) {
        Ok(config) => describe(&config),
        Err(_) => "(not shown: it holds a password)".to_owned(),
    }
}

/// Whether `url` holds a password as the driver reads it: `user:pw@`, `?password=`,
/// `?%70assword=`, `password = pw` and every other spelling its parser takes. A URL it
/// cannot read counts when anything in it could be one, so nothing unsure is kept or shown.
pub fn holds_password(url: &str) -> bool {
    match Config::from_str(&tls::take_settings(url).0) {
        Ok(config) => config.get_password().is_some(),
        Err(_) => could_hold_password(url),
    }
}

/// For a URL the driver cannot read: a colon in a URL's user part, or the word
/// `password` anywhere once percent-decoded.
fn could_hold_password(url: &str) -> bool {
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
        {
            return true;
        }
    }
    percent_decoded(url)
        .to_ascii_lowercase()
        .contains("password")
}

/// `text` with each `%XY` turned into its byte (others kept as they are).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_found_and_never_shown_in_any_spelling_the_driver_takes() {
        for url in [
            "postgres://bob:s3cret@db.example:5433/swarm",
            "postgresql://bob@h1,h2/swarm?sslmode=require&password=s3cret",
            "postgres://bob@db/swarm?%70assword=s3cret",
            "postgres://bob@db/swarm?PASSWORD=s3cret",
            "host=db user=bob password=s3cret dbname=swarm",
            "host=db user=bob password = s3cret dbname=swarm",
            "host=db user=bob password='s3cret' dbname=swarm",
            // Unreadable, yet named: not shown either.
            "postgres://bob:s3cret@db/swarm?bogus=1",
            "postgres://bob@db/swarm?bogus=1&%70assword=s3cret",
        ] {
            assert!(holds_password(url), "{url}");
            assert!(!redact(url).contains("s3cret"), "{url}: {}", redact(url));
        }
        assert_eq!(
            redact("postgres://bob:s3cret@db.example:5433/swarm"),
            "db.example:5433 (database swarm, user bob)"
        );
        for url in [
            "postgres://bob@db/swarm",
            "host=db user=bob dbname=swarm sslmode=verify-full",
            "postgres:///swarm",
        ] {
            assert!(!holds_password(url), "{url}");
            assert_eq!(redact(url), url);
        }
        assert_eq!(percent_decoded("%70a%zz%"), "pa%zz%");
    }

    #[test]
    fn the_server_is_described_without_its_password() {
        let config = Config::from_str("postgres://bob:s3cret@db.example:5433/swarm").unwrap();
        assert_eq!(
            describe(&config),
            "db.example:5433 (database swarm, user bob)"
        );
    }

    #[test]
    fn a_url_with_a_password_is_refused_naming_where_passwords_go() {
        for url in [
            "postgres://bob:s3cret@db/swarm",
            "host=db user=bob password=s3cret dbname=swarm",
            "postgres://bob@db/swarm?password=s3cret",
            "postgres://bob@db/swarm?%70assword=s3cret",
            "host=db user=bob password = s3cret dbname=swarm",
        ] {
            let e = check_url(url).unwrap_err().to_string();
            assert!(!e.contains("s3cret"), "{e}");
            assert!(e.contains("~/.pgpass or PGPASSWORD"), "{e}");
        }
        check_url("postgres://bob@db:5433/swarm?sslmode=require").unwrap();
    }
}
