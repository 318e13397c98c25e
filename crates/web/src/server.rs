//! The server: binding the address, accepting connections (over TLS when given a
//! certificate), and serving each with HTTP/1.1 under time limits.
//!
//! A client has `client_timeout` to send its first request's head: past it, it gets
//! `408 Request Timeout` and the connection closes (over TLS it is closed: the handshake,
//! also bounded, is where such a client stalls). A kept-alive connection is closed after
//! [`crate::conns::KEEP_ALIVE_IDLE`] without a request, and a head begun is bounded by hyper too; a body
//! is bounded where it is read ([`crate::actions`]). How many connections are open at
//! once, from one client and in all, and which idle one makes room for a new one, is
//! [`crate::conns`]'s: a connection past the limits is closed at once, never left waiting.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::app::App;
use crate::app::InFlight;
use crate::auth::{Auth, Secret};
use crate::conns::{Admitted, Conn, Conns, Ended, Tracked};
use crate::error::{Error, Result};
use crate::hub::{Hubs, TmuxFor};
use crate::notify::Notifier;
use crate::routes;
use swarm_store::Teams;
use swarm_team::life::shutdown::LadderOptions;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;

/// What `swarm serve` was asked for.
pub struct Options {
    pub teams: Teams,
    /// Serve only this team (else every team under the root).
    pub team: Option<TeamName>,
    pub listen: SocketAddr,
    pub token: Secret,
    /// A certificate chain and its key (PEM) to serve HTTPS with.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Webhook URLs (`--notify`).
    pub notify: Vec<String>,
    /// The waits before each retry of a webhook post.
    pub notify_backoff: Vec<Duration>,
    /// How long a client may take to send a request.
    pub client_timeout: Duration,
    /// How often a watched team is looked at without a change notice.
    pub rescan: Duration,
    pub tmux_for: TmuxFor,
    pub ladder: LadderOptions,
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    tls: bool,
    accept: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Binds `opts.listen` and starts serving on the current runtime.
    pub async fn start(opts: Options) -> Result<Server> {
        let tls = match &opts.tls {
            Some((cert, key)) => Some(crate::tls::acceptor(cert, key)?),
            None => None,
        };
        let listener = TcpListener::bind(opts.listen).await.map_err(|e| {
            Error::usage(format!(
                "failed to listen on {}: {e}; pick another address or port with --listen",
                opts.listen
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Serve(format!("failed to read the listening address: {e}")))?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let runtime = tokio::runtime::Handle::current();
        let notifier = match opts.notify.is_empty() {
            true => None,
            false => Some(Arc::new(Notifier::new(
                &opts.notify,
                format!("{scheme}://{addr}/"),
                opts.notify_backoff.clone(),
                runtime.clone(),
            )?)),
        };
        let hubs = Hubs::new(
            opts.teams.clone(),
            opts.team.clone(),
            opts.tmux_for.clone(),
            notifier.clone(),
            opts.rescan,
            runtime,
        );
        let app = Arc::new(App {
            auth: Arc::new(Auth::new(opts.token, tls.is_some())),
            hubs,
            client_timeout: opts.client_timeout,
            ladder: opts.ladder,
            actions: InFlight::default(),
        });
        if notifier.is_some() {
            // Every team is watched for notifications, and teams made later too.
            let app = Arc::clone(&app);
            tokio::spawn(async move {
                loop {
                    let a = Arc::clone(&app);
                    let _ = tokio::task::spawn_blocking(move || a.hubs.start_all()).await;
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
            });
        }
        let router = routes::router(app);
        let timeout = opts.client_timeout;
        let accept = tokio::spawn(accept_loop(listener, router, tls, timeout));
        Ok(Server {
            addr,
            tls: scheme == "https",
            accept,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's address, without the token.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}/", self.addr)
    }

    /// Serves until `stop` resolves.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        stop.await;
        self.accept.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    tls: Option<TlsAcceptor>,
    timeout: Duration,
) {
    let conns = Arc::new(Conns::default());
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, say: wait a moment rather than spin.
                tracing::warn!("failed to accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(admitted) = conns.admit(peer.ip()) else {
            tracing::debug!("closed a connection from {peer}: its connections are all busy");
            continue; // `tcp` drops: closed at once
        };
        let router = router.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            if let Err(e) = serve(tcp, router, tls, timeout, admitted).await {
                tracing::debug!("connection from {peer}: {e}");
            }
        });
    }
}

/// The router as hyper calls it, each request marking `conn` busy until its response's
/// body is sent.
fn tracked(
    router: axum::Router,
    conn: Arc<Conn>,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = hyper::Response<axum::body::Body>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    let inner = TowerToHyperService::new(router);
    hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = conn.begin();
        let call = hyper::service::Service::call(&inner, req);
        async move {
            let response = call.await?;
            Ok(response.map(|inner| axum::body::Body::new(Tracked { inner, busy })))
        }
    })
}

async fn serve(
    tcp: TcpStream,
    router: axum::Router,
    tls: Option<TlsAcceptor>,
    timeout: Duration,
    admitted: Admitted,
) -> std::io::Result<()> {
    let _ = tcp.set_nodelay(true);
    let conn = Arc::clone(&admitted.conn);
    let svc = tracked(router, Arc::clone(&conn));
    let mut http = hyper::server::conn::http1::Builder::new();
    // hyper's own bound (it closes the connection) comes after ours (which answers 408).
    http.timer(TokioTimer::new())
        .header_read_timeout(timeout + Duration::from_secs(1))
        .max_buf_size(64 * 1024);
    match tls {
        Some(acceptor) => {
            let stream = tokio::select! {
                done = acceptor.accept(tcp) => done?,
                ended = conn.until_closed(timeout) => {
                    let why = match ended {
                        Ended::Evicted => "closed during the TLS handshake to make room",
                        Ended::Idle | Ended::Silent => "the TLS handshake did not end in time",
                    };
                    return Err(std::io::Error::other(why));
                }
            };
            let served = http.serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                done = served => done.map_err(std::io::Error::other),
                _ = conn.until_closed(timeout) => Ok(()),
            }
        }
        None => {
            // A second handle on the socket, to answer a client too slow for hyper to.
            let std = tcp.into_std()?;
            let spare = TcpStream::from_std(std.try_clone()?)?;
            let tcp = TcpStream::from_std(std)?;
            let served = http.serve_connection(TokioIo::new(tcp), svc);
            let ended = tokio::select! {
                done = served => return done.map_err(std::io::Error::other),
                ended = conn.until_closed(timeout) => ended,
            };
            // Our handle is closed now: the spare one answers a silent client.
            match ended {
                Ended::Silent => too_slow(spare).await,
                Ended::Evicted | Ended::Idle => Ok(()),
            }
        }
    }
}

/// Tells a client that sent no whole request in time so, and closes.
async fn too_slow(mut tcp: TcpStream) -> std::io::Result<()> {
    let body = r#"{"error":{"status":408,"code":"request_timeout","message":"the request did not arrive in time"}}"#;
    let response = format!(
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await
    };
    tokio::time::timeout(Duration::from_secs(1), write)
        .await
        .map_err(|_| std::io::Error::other("the client did not take the 408"))?
}
