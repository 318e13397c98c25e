//! The claim index, `.swarm-index` in the task directory: a cache of what `next` needs to
//! know of each task (status, owned, internal, blockers), so a claim need not read the
//! whole list. Its format (`Index`'s render and parse), and loading, saving and dropping it.
//!
//! Invariants:
//! - it is a cache, never the truth: `next` only takes candidates from it and re-reads
//!   each from its file, under that task's lock, before claiming it;
//! - its name is not `*.json`, which Claude Code would take for a task;
//! - every mutation other than a claim drops it (empties it) under the lock, and one older
//!   than `INDEX_MAX_AGE_MS` or that does not parse is ignored: a torn copy lacks its
//!   `end` trailer;
//! - it is rewritten in place, never by rename nor with `O_TRUNC`; a failed write drops it.

use std::path::Path;

use crate::tasks::model::{Status, Task};
use swarm_util::no_symlinks;

/// The index at `path`, if there is one, whole and fresh.
pub(super) fn load(path: &Path) -> Option<Index> {
    let index = Index::parse(&std::fs::read_to_string(path).ok()?)?;
    let age = swarm_util::clock::now_ms() - index.built_ms;
    (0..INDEX_MAX_AGE_MS).contains(&age).then_some(index)
}

/// Written in place, not by rename: it is a cache whose torn copy fails to parse (it ends
/// with a trailer line) and is rebuilt, and rewriting in place spares the filesystem a new
/// inode on every claim. Nor is it opened with `O_TRUNC`: ext4 flushes a file truncated
/// to zero when it is closed.
pub(super) fn save(path: &Path, index: &Index) {
    use std::os::unix::fs::FileExt;
    let text = index.render();
    let Ok(file) = no_symlinks::open(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false),
        "open",
        path,
    ) else {
        return;
    };
    if file.write_all_at(text.as_bytes(), 0).is_err() || file.set_len(text.len() as u64).is_err() {
        drop_at(path);
    }
}

/// Empties the index at `path`. Called under the lock by every mutation other than a
/// claim, and by `next` when nothing is ready.
pub(super) fn drop_at(path: &Path) {
    if let Ok(f) = no_symlinks::open(std::fs::OpenOptions::new().write(true), "open", path) {
        let _ = f.set_len(0);
    }
}

const INDEX_MAX_AGE_MS: i64 = 5_000;

/// What `next` needs to know of each task, cached between claims. One line per task
/// (`<id> <status p|i|c><owned o|-><internal x|-> <blockers,comma,separated|->`) between a
/// header with the build time and a trailer.
#[derive(Debug)]
pub(super) struct Index {
    built_ms: i64,
    tasks: Vec<IndexEntry>,
}

#[derive(Debug)]
struct IndexEntry {
    id: u64,
    status: Status,
    owned: bool,
    internal: bool,
    blocked_by: Vec<u64>,
}

const INDEX_HEADER: &str = "swarm-task-index 1";

impl IndexEntry {
    fn of(t: &Task) -> IndexEntry {
        IndexEntry {
            id: t.numeric_id(),
            status: t.status,
            owned: t.owner.is_some(),
            internal: t.is_internal(),
            blocked_by: t.blocked_by.iter().filter_map(|b| b.parse().ok()).collect(),
        }
    }
}

impl Index {
    pub(super) fn build(tasks: &[Task]) -> Index {
        Index {
            built_ms: swarm_util::clock::now_ms(),
            tasks: tasks.iter().map(IndexEntry::of).collect(),
        }
    }

    fn render(&self) -> String {
        let mut out = format!("{INDEX_HEADER} {}\n", self.built_ms);
        for t in &self.tasks {
            let status = match t.status {
                Status::Pending => 'p',
                Status::InProgress => 'i',
                Status::Completed => 'c',
            };
            let blockers = if t.blocked_by.is_empty() {
                "-".to_owned()
            } else {
                t.blocked_by
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push_str(&format!(
                "{} {status}{}{} {blockers}\n",
                t.id,
                if t.owned { 'o' } else { '-' },
                if t.internal { 'x' } else { '-' },
            ));
        }
        out.push_str("end\n");
        out
    }

    fn parse(text: &str) -> Option<Index> {
        let mut lines = text.lines();
        let built_ms = lines
            .next()?
            .strip_prefix(INDEX_HEADER)?
            .trim()
            .parse()
            .ok()?;
        let mut tasks = Vec::new();
        for line in lines {
            if line == "end" {
                return Some(Index { built_ms, tasks });
            }
            let mut parts = line.split(' ');
            let id = parts.next()?.parse().ok()?;
            let flags = parts.next()?.as_bytes();
            let status = match flags.first()? {
                b'p' => Status::Pending,
                b'i' => Status::InProgress,
                b'c' => Status::Completed,
                _ => return None,
            };
            let blockers = parts.next()?;
            let blocked_by = if blockers == "-" {
                Vec::new()
            } else {
                blockers
                    .split(',')
                    .map(|b| b.parse().ok())
                    .collect::<Option<Vec<u64>>>()?
            };
            tasks.push(IndexEntry {
                id,
                status,
                owned: *flags.get(1)? == b'o',
                internal: *flags.get(2)? == b'x',
                blocked_by,
            });
        }
        None // no trailer: torn
    }

    /// Ids that look ready, lowest first.
    pub(super) fn ready(&self) -> impl Iterator<Item = u64> + '_ {
        let open: std::collections::HashSet<u64> = self
            .tasks
            .iter()
            .filter(|t| t.status != Status::Completed)
            .map(|t| t.id)
            .collect();
        self.tasks
            .iter()
            .filter(move |t| {
                t.status == Status::Pending
                    && !t.owned
                    && !t.internal
                    && t.blocked_by.iter().all(|b| !open.contains(b))
            })
            .map(|t| t.id)
    }

    pub(super) fn refresh(&mut self, task: &Task) {
        let entry = IndexEntry::of(task);
        match self.tasks.iter_mut().find(|t| t.id == entry.id) {
            Some(slot) => *slot = entry,
            None => self.tasks.push(entry),
        }
    }

    pub(super) fn forget(&mut self, id: &str) {
        self.tasks.retain(|t| t.id.to_string() != id);
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;

    #[test]
    fn index_round_trips_and_a_torn_one_is_refused() {
        let index = Index {
            built_ms: 1_700_000_000_000,
            tasks: vec![
                IndexEntry {
                    id: 1,
                    status: Status::Completed,
                    owned: true,
                    internal: false,
                    blocked_by: vec![],
                },
                IndexEntry {
                    id: 2,
                    status: Status::Pending,
                    owned: false,
                    internal: true,
                    blocked_by: vec![1, 3],
                },
            ],
        };
        let text = index.render();
        let back = Index::parse(&text).unwrap();
        assert_eq!(back.render(), text);
        assert!(Index::parse(&text[..text.len() - 4]).is_none());
        assert!(Index::parse("").is_none());
    }
}
