//! The connections open at once, so that idle sockets cannot keep a request out: at most
//! [`PER_PEER`] from one client address and [`MAX_CONNECTIONS`] in all.
//!
//! A connection is busy while a request on it is being answered (its response body
//! included, so an event stream stays busy), and idle otherwise: before its first request,
//! and between requests on a kept-alive one. A new connection past a limit closes the
//! oldest idle connection under that limit (the peer's own first), and is itself closed at
//! once, unanswered, when every one there is busy. So 256 sockets that send nothing delay
//! nobody: each new connection, a real one included, pushes the oldest idle one out.
//!
//! An idle kept-alive connection is closed after [`KEEP_ALIVE_IDLE`]; one that has sent
//! no request yet gets the client timeout (and a 408, see [`crate::server`]).

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::sync::Notify;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Connections from one client address at once.
pub const PER_PEER: usize = 32;
/// How long a kept-alive connection may wait for its next request.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(5);

/// The open connections, oldest first.
#[derive(Debug, Default)]
pub struct Conns {
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    conns: Vec<(u64, IpAddr, Arc<Conn>)>,
}

impl Open {
    /// Closes the oldest idle connection `which` picks; false if there is none.
    fn evict(&mut self, which: impl Fn(IpAddr) -> bool) -> bool {
        let Some(i) = self
            .conns
            .iter()
            .position(|(_, peer, c)| which(*peer) && c.busy.load(Ordering::SeqCst) == 0)
        else {
            return false;
        };
        let (_, _, conn) = self.conns.remove(i);
        conn.close.notify_one();
        true
    }
}

impl Conns {
    /// Room for a new connection from `peer`, if some can be made (see the module
    /// comment); `None`: close it at once.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Admitted> {
        let peer = peer.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_peer = open.conns.iter().filter(|(_, p, _)| *p == peer).count();
        let room = if from_peer >= PER_PEER {
            open.evict(|p| p == peer)
        } else if open.conns.len() >= MAX_CONNECTIONS {
            open.evict(|p| p == peer) || open.evict(|_| true)
        } else {
            true
        };
        if !room {
            return None;
        }
        open.next += 1;
        let id = open.next;
        let conn = Arc::new(Conn::new());
        open.conns.push((id, peer, Arc::clone(&conn)));
        Some(Admitted {
            conns: Arc::clone(self),
            id,
            conn,
        })
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .conns
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A connection's place among the open ones, given up when dropped.
#[derive(Debug)]
pub struct Admitted {
    conns: Arc<Conns>,
    id: u64,
    pub conn: Arc<Conn>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.conns.open.lock().unwrap_or_else(|p| p.into_inner());
        open.conns.retain(|(id, _, _)| *id != self.id);
    }
}

/// One connection's state: requests under way, whether one came, when it was last used.
#[derive(Debug)]
pub struct Conn {
    busy: AtomicUsize,
    seen: AtomicBool,
    last: Mutex<Instant>,
    /// Told to close: a newer connection needs its place.
    close: Notify,
    /// Told a request ended, so the idle clock starts again.
    settled: Notify,
}

/// Why a connection is to be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A newer connection needed its place.
    Evicted,
    /// Kept alive, it had no request for [`KEEP_ALIVE_IDLE`].
    Idle,
    /// It sent no whole request within the client timeout.
    Silent,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            busy: AtomicUsize::new(0),
            seen: AtomicBool::new(false),
            last: Mutex::new(Instant::now()),
            close: Notify::new(),
            settled: Notify::new(),
        }
    }

    /// A request begins; it ends when the guard (held by its response's body) drops.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.seen.store(true, Ordering::SeqCst);
        Busy(Arc::clone(self))
    }

    fn touch(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Resolves when the connection should be closed: evicted, idle too long, or silent
    /// past `first` before its first request.
    pub async fn until_closed(&self, first: Duration) -> Ended {
        loop {
            let (limit, why) = match self.seen.load(Ordering::SeqCst) {
                true => (KEEP_ALIVE_IDLE, Ended::Idle),
                false => (first, Ended::Silent),
            };
            let idle_for = self
                .last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .elapsed();
            let busy = self.busy.load(Ordering::SeqCst) > 0;
            let wait = if busy {
                limit
            } else {
                limit.saturating_sub(idle_for)
            };
            if !busy && wait.is_zero() {
                return why;
            }
            tokio::select! {
                () = self.close.notified() => return Ended::Evicted,
                () = self.settled.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// A request under way on a connection.
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.settled.notify_one();
    }
}

/// A response body that keeps its connection busy until it is sent or dropped.
pub struct Tracked {
    pub inner: Body,
    pub busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_new_connection_pushes_out_the_oldest_idle_one_of_its_peer() {
        let conns = Arc::new(Conns::default());
        let first: Vec<_> = (0..PER_PEER).map(|_| conns.admit(ip(1)).unwrap()).collect();
        // The oldest is busy (a stream, say): the next oldest goes.
        let _busy = first[0].conn.begin();
        let other = conns.admit(ip(2)).unwrap();
        let newest = conns.admit(ip(1)).unwrap();
        assert_eq!(conns.len(), PER_PEER + 1);
        let open = conns.open.lock().unwrap();
        let ids: Vec<u64> = open.conns.iter().map(|(id, _, _)| *id).collect();
        assert!(
            ids.contains(&first[0].id) && !ids.contains(&first[1].id),
            "{ids:?}"
        );
        assert!(ids.contains(&other.id) && ids.contains(&newest.id));
        drop(open);
        // Every one of the peer's busy: the newcomer is refused; another peer is not.
        let _all: Vec<_> = first[2..].iter().map(|a| a.conn.begin()).collect();
        let _newest = newest.conn.begin();
        assert!(conns.admit(ip(1)).is_none());
        assert!(conns.admit(ip(3)).is_some());
        // A dropped connection gives its place back.
        drop(other);
        assert_eq!(conns.len(), PER_PEER);
    }

    #[test]
    fn past_the_total_the_oldest_idle_connection_anywhere_goes() {
        let conns = Arc::new(Conns::default());
        let held: Vec<_> = (0..MAX_CONNECTIONS)
            .map(|i| conns.admit(ip(10 + (i / PER_PEER) as u8)).unwrap())
            .collect();
        let _newcomer = conns.admit(ip(200)).expect("an idle one made room");
        assert_eq!(conns.len(), MAX_CONNECTIONS);
        let _busy: Vec<_> = held.iter().map(|a| a.conn.begin()).collect();
        // The newcomer is the one idle connection: the next from its peer takes its place.
        let second = conns.admit(ip(200)).expect("the peer's idle one made room");
        let _second = second.conn.begin();
        // Nothing idle anywhere: refused at once.
        assert!(conns.admit(ip(201)).is_none());
        assert_eq!(conns.len(), MAX_CONNECTIONS);
    }
}
