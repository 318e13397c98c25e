//! Doing the same blocking work for many items at once, on a few threads of this process.
//!
//! For work that mostly waits (a durable write waiting on the disk's flush, a child process):
//! flushes of writes made together are shared, so N of them cost about what one does. Each
//! item is done exactly once, whatever becomes of the others; results come back in the
//! order of the items. A thread that cannot be made leaves its share to the others, and to
//! the calling thread, which works too.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` of every item, at most `threads` at a time (the caller's thread among them).
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return;
            };
            let r = f(item);
            *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(items.len()) {
            let _ = std::thread::Builder::new().spawn_scoped(s, work);
        }
        work();
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every item was done")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_order() {
        let items: Vec<u32> = (0..100).collect();
        let calls = AtomicUsize::new(0);
        let out = map(&items, 8, |i| {
            calls.fetch_add(1, Ordering::Relaxed);
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(calls.load(Ordering::Relaxed), 100);
        assert!(map(&[] as &[u32], 8, |i| *i).is_empty());
        assert_eq!(map(&[7], 0, |i| *i), vec![7]);
    }
}
