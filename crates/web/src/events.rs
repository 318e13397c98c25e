//! The event stream of one team (`GET /api/teams/{team}/events`, server-sent events): at
//! once every part of the team's view (`team`, `members`, `tasks`, `feed`, `approvals`,
//! `mergeQueue`, `panes`, `notices`), each as an event named after it whose data is the
//! part's JSON; then each part again whenever it changes. A comment every 15 s keeps
//! proxies from closing a quiet stream.
//!
//! A slow reader never holds the hub up: the hub only replaces its latest parts, and each
//! stream sends what is newest when its reader is ready, skipping what it missed.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream::{self, StreamExt};
use tokio::sync::watch;

use crate::hub::{Hub, Published, Watching};

const KEEP_ALIVE: Duration = Duration::from_secs(15);

struct Reader {
    rx: watch::Receiver<Arc<Published>>,
    sent: HashMap<&'static str, u64>,
    first: bool,
    _watching: Watching,
}

impl Reader {
    /// The events for the parts newer than what this reader was sent.
    fn news(&mut self) -> Vec<Event> {
        let published = Arc::clone(&self.rx.borrow_and_update());
        let mut news = Vec::new();
        for (name, part) in &published.parts {
            if self.sent.get(name).is_some_and(|v| *v >= part.version) {
                continue;
            }
            self.sent.insert(name, part.version);
            news.push(
                Event::default()
                    .event(*name)
                    .id(part.version.to_string())
                    .data(&*part.json),
            );
        }
        news
    }
}

/// The stream for a page watching `hub`.
pub fn stream(hub: &Arc<Hub>) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let (rx, watching) = hub.subscribe();
    let reader = Reader {
        rx,
        sent: HashMap::new(),
        first: true,
        _watching: watching,
    };
    let events = stream::unfold(reader, |mut reader| async move {
        loop {
            if !reader.first && reader.rx.changed().await.is_err() {
                return None; // the hub is gone: the server is stopping
            }
            reader.first = false;
            let news = reader.news();
            if !news.is_empty() {
                return Some((stream::iter(news.into_iter().map(Ok)), reader));
            }
        }
    })
    .flatten();
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}
