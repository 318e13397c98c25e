//! Landing teammates' worktree branches on one integration target, one branch at a time,
//! through the team's merge queue (`store::merge_queue`) and the project's check.
//!
//! Every merge happens in a dedicated integration worktree,
//! `<git common dir>/swarm/<team>/integration` on branch `swarm/<team>/integration`, never
//! in the user's checkout. After a merge the check runs there; only a green check keeps
//! the merge (a red one resets the worktree to before it), and only at the end is the
//! target moved: its ref directly when no working tree has it checked out, by
//! `git merge --ff-only` in the working tree that has it when that tree is clean; a
//! checkout with any change is never touched and the result stays on the integration
//! branch.
//!
//! Git runs as a program with an argv, never through a shell. The one exception is the
//! check itself: the user wrote it as a shell command (`--check`, `swarm.check`), so it
//! runs under `sh -c`, in the integration worktree.
//!
//! Invariants: nothing lands twice (an entry whose head is already reachable from the
//! integration branch is `merged` without merging again); an interrupted run starts again
//! from the last integration commit whose check was green (`integration_tip`); a held
//! entry is handed back to its teammate only after the target has moved, so the target it
//! is told to rebase onto has what landed before it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::merge_handback::{self as handback, HandBack};
use swarm_store::Store;
pub use swarm_store::merge_queue::Strategy;
use swarm_store::merge_queue::{self, Entry, EntryState, Queue};
use swarm_store::worktrees;
use swarm_util::clock;
use swarm_util::error::Base as _;
use swarm_util::names::TeamName;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub into: Option<String>,
    /// The check command given on the command line (else the team's, else the project's
    /// `swarm.check`).
    pub check: Option<String>,
    /// Else the team's, else [`Strategy::Merge`].
    pub strategy: Option<Strategy>,
    /// Only say what would be queued and merged.
    pub dry_run: bool,
    /// Take from a teammate still at work only what it committed for a task it
    /// completed (the lead's runs), not its branch's latest commits (`swarm merge`).
    pub completed_work_only: bool,
    /// The caller restarts a teammate handed work back that is not running (the lead):
    /// see [`handback::hand_back`].
    pub restarts_owners: bool,
    /// How to reach teammates' worktrees on other hosts (their branches are fetched).
    pub dirs: swarm_config::project::UserDirs,
}

/// What a run of the queue came to.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Empty when the team never had a teammate worktree.
    pub target: String,
    pub target_commit: String,
    /// The integration branch holds work the target could not be moved to, and why.
    pub left_on_integration: Option<String>,
    pub entries: Vec<Entry>,
    /// Kept worktrees (and their branches) removed because their work is on the target.
    pub removed: Vec<String>,
}

impl Outcome {
    pub fn held(&self) -> usize {
        self.entries.iter().filter(|e| e.state.held()).count()
    }

    /// Where the target is now, and why the integration branch holds more, if it does.
    pub fn target_lines(&self) -> Vec<String> {
        let commit = &self.target_commit[..self.target_commit.len().min(12)];
        let mut lines = vec![format!("{} is at {commit}", self.target)];
        lines.extend(self.left_on_integration.clone());
        lines
    }
}

const CHECK_LINES: usize = 40;

fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args).stdin(Stdio::null());
    cmd
}

fn git_in(dir: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    git_command(dir, args).output()
}

/// Runs git in `dir`; its trimmed stdout, or an error naming the command.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_in(dir, args).map_err(|e| Error::Git(format!("failed to run git: {e}")))?;
    if !out.status.success() {
        return Err(Error::Git(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs git in `dir`; its stderr when it fails.
fn try_git(dir: &Path, args: &[&str]) -> std::result::Result<(), String> {
    stderr_if_failed(git_in(dir, args))
}

fn stderr_if_failed(out: std::io::Result<std::process::Output>) -> std::result::Result<(), String> {
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => Err(format!("failed to run git: {e}")),
    }
}

/// The name merge commits carry when the project has no identity of its own (git would
/// refuse to commit, and the queue would stall on it).
const FALLBACK_NAME: &str = "swarm merge queue";
const FALLBACK_EMAIL: &str = "swarm@localhost";

/// Runs a git command that commits in `dir`, as the project's own identity or, when it
/// has none (`fallback`), as the merge queue's; its stderr when it fails.
fn committing(dir: &Path, args: &[&str], fallback: bool) -> std::result::Result<(), String> {
    let mut cmd = git_command(dir, args);
    if fallback {
        cmd.env("GIT_AUTHOR_NAME", FALLBACK_NAME)
            .env("GIT_AUTHOR_EMAIL", FALLBACK_EMAIL)
            .env("GIT_COMMITTER_NAME", FALLBACK_NAME)
            .env("GIT_COMMITTER_EMAIL", FALLBACK_EMAIL);
    }
    stderr_if_failed(cmd.output())
}

/// Whether git in `dir` succeeds.
fn git_ok(dir: &Path, args: &[&str]) -> bool {
    git_in(dir, args).is_ok_and(|o| o.status.success())
}

fn is_ancestor(dir: &Path, commit: &str, of: &str) -> bool {
    git_ok(dir, &["merge-base", "--is-ancestor", commit, of])
}

fn rev(dir: &Path, name: &str) -> Option<String> {
    git(
        dir,
        &["rev-parse", "--verify", "-q", &format!("{name}^{{commit}}")],
    )
    .ok()
}

/// One line about an entry: its state, branch, agent, and what came of it.
pub fn describe(e: &Entry) -> String {
    let mut s = format!("{:<12} {} ({})", e.state.as_str(), e.branch, e.agent);
    if let Some(c) = &e.merged_commit {
        s.push_str(&format!(" as {}", &c[..c.len().min(12)]));
    }
    if !e.conflicts.is_empty() {
        s.push_str(&format!(": conflicts in {}", e.conflicts.join(", ")));
    }
    if let Some(out) = &e.check_output {
        s.push_str(&format!(
            ": check failed: {}",
            out.lines().last().unwrap_or("").trim()
        ));
    }
    match e.handed_back.as_deref() {
        Some(task) if task.starts_with('#') => {
            s.push_str(&format!("; handed back to {} as task {task}", e.agent));
        }
        Some(why) => s.push_str(&format!("; held for you: {why}")),
        None => {}
    }
    s
}

pub fn integration_branch(team: &TeamName) -> String {
    format!("swarm/{team}/integration")
}

fn integration_path(git_dir: &Path, team: &TeamName) -> PathBuf {
    git_dir
        .join("swarm")
        .join(team.as_str())
        .join("integration")
}

/// The project's main checkout: the directory holding the common git directory.
fn project_dir(git_dir: &Path) -> PathBuf {
    git_dir.parent().unwrap_or(git_dir).to_path_buf()
}

/// Adds every teammate branch with commits not on the target and not queued already;
/// returns the queue as it then is.
fn enqueue(store: &Store, opts: &Options) -> Result<Queue> {
    let records = store.worktrees().all_worktrees()?;
    let known = store.merge_queue().load()?;
    let here = records.iter().find(|r| r.host.is_none());
    let git_dir = match (here, &known.git_dir) {
        (Some(r), _) => r.git_dir.clone(),
        (None, Some(g)) => g.clone(),
        // Nothing was ever isolated in a worktree: nothing to merge.
        (None, None) => return Ok(known),
    };
    let project = project_dir(&git_dir);
    let target = match (&opts.into, &known.target) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) => t.clone(),
        (None, None) => git(&project, &["symbolic-ref", "--short", "HEAD"]).map_err(|_| {
            Error::usage(format!(
                "the checkout at {} is not on a branch; name the target with --into BRANCH",
                project.display()
            ))
        })?,
    };
    if rev(&project, &format!("refs/heads/{target}")).is_none() {
        return Err(Error::usage(format!(
            "no branch {target} in {}; name an existing branch with --into",
            project.display()
        )));
    }
    // Each agent's completed tasks, newest last, with the commit each was completed at.
    let mut tasks = store.tasks().list().unwrap_or_default();
    tasks.retain(|t| !t.is_internal() && t.status == swarm_store::tasks::Status::Completed);
    tasks.sort_by_key(|t| t.id.parse::<u64>().unwrap_or(0));
    let completed_at = |t: &swarm_store::tasks::Task| {
        t.metadata
            .as_ref()
            .and_then(|m| m.get(merge_queue::TASK_COMMIT_KEY))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let mut additions = Vec::new();
    for r in &records {
        if r.host.is_some() {
            fetch_from_host(store, r, &git_dir, &opts.dirs);
        }
        let Some(tip) = rev(&project, &format!("refs/heads/{}", r.branch)) else {
            continue;
        };
        let mut mine = tasks.iter().filter(|t| t.owned_by(&r.agent));
        // A teammate at work lands what it completed a task at; a stopped one, all it has.
        let (head, task) = if opts.completed_work_only && r.state == worktrees::RecordState::Active
        {
            match mine
                .rev()
                .filter_map(|t| completed_at(t).map(|c| (c, t.id.clone())))
                .find(|(c, _)| is_ancestor(&project, c, &tip))
            {
                Some((c, id)) => (c, Some(id)),
                None => continue,
            }
        } else {
            (tip, mine.next_back().map(|t| t.id.clone()))
        };
        if head == r.base || is_ancestor(&project, &head, &format!("refs/heads/{target}")) {
            continue;
        }
        // A branch whose head was queued before (whatever came of it) waits for new commits.
        if known
            .entries
            .iter()
            .any(|e| e.branch == r.branch && (e.head == head || e.state.pending()))
        {
            continue;
        }
        let now = clock::now_ms();
        additions.push(Entry {
            agent: r.agent.clone(),
            branch: r.branch.clone(),
            task,
            base: r.base.clone(),
            head,
            state: EntryState::Queued,
            queued_at: now,
            updated_at: now,
            conflicts: Vec::new(),
            check_output: None,
            merged_commit: None,
            handed_back: None,
        });
    }
    if opts.dry_run {
        let mut q = known;
        q.entries.extend(additions);
        q.target = Some(target);
        q.git_dir = Some(git_dir);
        return Ok(q);
    }
    Ok(store.merge_queue().update(|q| {
        if q.target.as_deref() != Some(target.as_str()) {
            q.integration_tip = None;
        }
        q.git_dir = Some(git_dir);
        q.target = Some(target);
        // A held entry whose branch came back with new commits is superseded by them.
        for e in q.entries.iter_mut().filter(|e| e.state.held()) {
            if additions.iter().any(|a| a.branch == e.branch) {
                e.state = EntryState::Abandoned;
                e.updated_at = clock::now_ms();
            }
        }
        q.entries.extend(additions);
        q.clone()
    })?)
}

/// Brings the branch of `r`, a worktree on another host, into the lead's repository. A
/// host that cannot be reached keeps what was fetched last (said in the log).
fn fetch_from_host(
    store: &Store,
    r: &worktrees::Record,
    git_dir: &Path,
    dirs: &swarm_config::project::UserDirs,
) {
    let fetched = crate::remote_worktree::reach(store, r, dirs)
        .and_then(|(ssh, _)| crate::remote_worktree::fetch(&ssh, r, git_dir));
    if let Err(e) = fetched {
        tracing::warn!("merge queue: {e}");
    }
}

/// Sends the target to the host of `agent`'s worktree, when it is on another host, so that
/// the teammate can rebase onto it there. Said in the log when it cannot.
fn share_target(
    store: &Store,
    agent: &str,
    target_ref: &str,
    dirs: &swarm_config::project::UserDirs,
) {
    let Ok(Some(r)) = store.worktrees().worktree(agent) else {
        return;
    };
    if r.host.is_none() {
        return;
    }
    let shared = crate::remote_worktree::reach(store, &r, dirs).and_then(|(ssh, lead)| {
        let url = ssh.git_url(&r.git_dir.to_string_lossy());
        crate::remote_worktree::push(&ssh, &lead, &url, &format!("+{target_ref}:{target_ref}"))
    });
    if let Err(e) = shared {
        tracing::warn!("merge queue: {e}");
    }
}

/// Records the team's own merge settings (`swarm run --check --into --merge-strategy`),
/// which every later run of its queue uses unless told otherwise.
pub fn configure(store: &Store, opts: &Options) -> Result<()> {
    if opts.check.is_none() && opts.into.is_none() && opts.strategy.is_none() {
        return Ok(());
    }
    Ok(store.merge_queue().update(|q| {
        if opts.check.is_some() {
            q.check = opts.check.clone();
        }
        if opts.into.is_some() {
            q.target = opts.into.clone();
        }
        if opts.strategy.is_some() {
            q.strategy = opts.strategy;
        }
    })?)
}

/// Puts the held entry of `branch` back in the queue, as if new, for another try (after
/// a person fixed what held it). Its hand-back rounds still count.
pub fn retry(store: &Store, branch: &str) -> Result<Entry> {
    store.merge_queue().update(|q| {
        let held = q
            .entries
            .iter_mut()
            .rev()
            .find(|e| e.branch == branch && e.state.held());
        match held {
            Some(e) => {
                e.state = EntryState::Queued;
                e.conflicts.clear();
                e.check_output = None;
                e.handed_back = None;
                e.updated_at = clock::now_ms();
                Ok(e.clone())
            }
            None => Err(Error::usage(format!(
                "no held entry for branch {branch} in the merge queue; see `swarm merge --status`"
            ))),
        }
    })?
}

/// Enqueues what is new, then merges every pending entry in order and moves the target.
pub fn run(store: &Store, opts: &Options, on_entry: &dyn Fn(&Entry)) -> Result<Outcome> {
    let _turn = if opts.dry_run {
        None
    } else {
        Some(store.merge_queue().acquire_run()?)
    };
    let queue = enqueue(store, opts)?;
    let Some(git_dir) = queue.git_dir.clone() else {
        return Ok(Outcome::default());
    };
    let target = queue.target.clone().unwrap_or_default();
    let project = project_dir(&git_dir);
    let target_ref = format!("refs/heads/{target}");
    if opts.dry_run {
        let target_commit = rev(&project, &target_ref).unwrap_or_default();
        return Ok(Outcome {
            target,
            target_commit,
            left_on_integration: None,
            entries: queue.entries,
            removed: Vec::new(),
        });
    }
    let check = match opts.check.as_ref().or(queue.check.as_ref()) {
        Some(c) => Some(c.clone()),
        None => swarm_config::project::swarm_check(&project)?,
    };
    let strategy = opts.strategy.or(queue.strategy).unwrap_or_default();
    let wt = prepare_integration(store.team(), &git_dir, &queue, &target_ref)?;
    let mut held = Vec::new();
    for (i, entry) in queue.entries.iter().enumerate() {
        if !entry.state.pending() {
            continue;
        }
        let done = land(store, &wt, i, entry, strategy, check.as_deref())?;
        if done.state.held() {
            held.push((i, done));
        } else {
            on_entry(&done);
        }
    }
    let advanced = advance_target(&project, &wt, &target);
    // Handed back only now: a teammate told to rebase onto the target must find there
    // what landed before its branch in this run.
    for (i, done) in held {
        // One on another host rebases there: its repository needs the target too.
        share_target(store, &done.agent, &target_ref, &opts.dirs);
        let fate = match handback::hand_back(store, &done, &target, opts.restarts_owners)? {
            HandBack::Task(id) => format!("#{id}"),
            HandBack::Held(why) => why,
        };
        swarm_util::fault::point("merge.handed_back");
        on_entry(&set_entry(store, i, |e| e.handed_back = Some(fate))?);
    }
    let left_on_integration = advanced?;
    let entries = store.merge_queue().load()?.entries;
    let target_commit = rev(&project, &target_ref).unwrap_or_default();
    let removed = tidy(store, &project, &target_commit, &entries, &opts.dirs);
    Ok(Outcome {
        target_commit,
        target,
        left_on_integration,
        entries,
        removed,
    })
}

/// The integration worktree, clean, at the last green integration commit (if the target
/// has not moved past it) or else at the target.
fn prepare_integration(
    team: &TeamName,
    git_dir: &Path,
    queue: &Queue,
    target_ref: &str,
) -> Result<PathBuf> {
    let project = project_dir(git_dir);
    let target_tip = rev(&project, target_ref)
        .ok_or_else(|| Error::usage(format!("no branch {target_ref} in {}", project.display())))?;
    let start = match &queue.integration_tip {
        Some(tip) if rev(&project, tip).is_some() && is_ancestor(&project, &target_tip, tip) => {
            tip.clone()
        }
        _ => target_tip,
    };
    let wt = integration_path(git_dir, team);
    let branch = integration_branch(team);
    if !wt.join(".git").exists() {
        let _ = git(&project, &["worktree", "prune"]);
        std::fs::create_dir_all(wt.parent().unwrap_or(&wt))
            .map_err(|e| Error::io("create directory", &wt, e))?;
        let wt_s = wt.to_string_lossy();
        git(
            &project,
            &["worktree", "add", "-q", "-f", "-B", &branch, &wt_s, &start],
        )?;
    } else {
        // Whatever an interrupted run left: a merge, a cherry-pick, stray files.
        let _ = git(&wt, &["merge", "--abort"]);
        let _ = git(&wt, &["cherry-pick", "--quit"]);
        git(&wt, &["checkout", "-q", "-f", "-B", &branch, &start])?;
        git(&wt, &["reset", "-q", "--hard", &start])?;
        git(&wt, &["clean", "-q", "-fd"])?;
    }
    Ok(wt)
}

fn set_entry(store: &Store, i: usize, f: impl FnOnce(&mut Entry) + Send) -> Result<Entry> {
    Ok(store.merge_queue().update(|q| {
        let e = &mut q.entries[i];
        f(e);
        e.updated_at = clock::now_ms();
        e.clone()
    })?)
}

/// Merges entry `i` in the integration worktree and runs the check; records the outcome.
fn land(
    store: &Store,
    wt: &Path,
    i: usize,
    entry: &Entry,
    strategy: Strategy,
    check: Option<&str>,
) -> Result<Entry> {
    let before = git(wt, &["rev-parse", "HEAD"])?;
    if is_ancestor(wt, &entry.head, &before) {
        return set_entry(store, i, |e| {
            e.state = EntryState::Merged;
            e.merged_commit.get_or_insert(before.clone());
        });
    }
    set_entry(store, i, |e| e.state = EntryState::Merging)?;
    let message = format!(
        "swarm: merge {} (agent {}{})",
        entry.branch,
        entry.agent,
        entry
            .task
            .as_ref()
            .map(|t| format!(", task {t}"))
            .unwrap_or_default()
    );
    // Without an identity of the project's own, the merge commits are the queue's.
    let fallback = !git_ok(wt, &["config", "user.email"]);
    let merged = match strategy {
        Strategy::Merge => committing(
            wt,
            &["merge", "-q", "--no-ff", "-m", &message, &entry.head],
            fallback,
        ),
        Strategy::Squash => try_git(wt, &["merge", "-q", "--squash", &entry.head])
            .and_then(|()| committing(wt, &["commit", "-q", "-m", &message], fallback)),
        Strategy::Rebase => {
            let fork = git(wt, &["merge-base", &before, &entry.head])?;
            let range = format!("{fork}..{}", entry.head);
            committing(wt, &["cherry-pick", "--allow-empty", &range], fallback)
        }
    };
    if let Err(stderr) = merged {
        let files = git(wt, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default();
        let _ = git(wt, &["merge", "--abort"]);
        let _ = git(wt, &["cherry-pick", "--abort"]);
        git(wt, &["reset", "-q", "--hard", &before])?;
        let conflicts: Vec<String> = files.lines().map(str::to_owned).collect();
        if conflicts.is_empty() {
            // Not a conflict (no identity, a hook refused...): the entry waits for a rerun.
            set_entry(store, i, |e| e.state = EntryState::Queued)?;
            return Err(Error::Git(format!(
                "failed to merge {} in {}: {}; fix that and run `swarm merge` again",
                entry.branch,
                wt.display(),
                stderr.trim()
            )));
        }
        return set_entry(store, i, |e| {
            e.state = EntryState::Conflict;
            e.conflicts = conflicts;
        });
    }
    swarm_util::fault::point("merge.after_merge");
    set_entry(store, i, |e| e.state = EntryState::Checking)?;
    if let Some(cmd) = check
        && let Some(output) = run_check(wt, cmd)?
    {
        git(wt, &["reset", "-q", "--hard", &before])?;
        git(wt, &["clean", "-q", "-fd"])?;
        return set_entry(store, i, |e| {
            e.state = EntryState::CheckFailed;
            e.check_output = Some(output);
        });
    }
    let after = git(wt, &["rev-parse", "HEAD"])?;
    store
        .merge_queue()
        .update(|q| q.integration_tip = Some(after.clone()))?;
    set_entry(store, i, |e| {
        e.state = EntryState::Merged;
        e.merged_commit = Some(after);
        e.check_output = None;
        e.conflicts.clear();
    })
}

/// Runs the user's check in `dir` (see the module comment on `sh -c`): `None` when it
/// passed, else its last lines of output.
fn run_check(dir: &Path, cmd: &str) -> Result<Option<String>> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Git(format!("failed to run the check `{cmd}`: {e}")))?;
    if out.status.success() {
        return Ok(None);
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(CHECK_LINES)..].join("\n");
    Ok(Some(format!("`{cmd}` failed ({}):\n{tail}", out.status)))
}

/// Moves `target` to the integration branch's head where that is safe; otherwise says
/// why the result stays on the integration branch.
fn advance_target(project: &Path, wt: &Path, target: &str) -> Result<Option<String>> {
    let target_ref = format!("refs/heads/{target}");
    let tip = git(wt, &["rev-parse", "HEAD"])?;
    let old = rev(project, &target_ref).unwrap_or_default();
    if tip == old {
        return Ok(None);
    }
    if !is_ancestor(project, &old, &tip) {
        return Ok(Some(format!(
            "{target} moved while merging; the result is on {}",
            git(wt, &["symbolic-ref", "--short", "HEAD"])?
        )));
    }
    let integration = git(wt, &["symbolic-ref", "--short", "HEAD"])?;
    let list = git(project, &["worktree", "list", "--porcelain"])?;
    let mut checked_out: Option<PathBuf> = None;
    let mut path: Option<PathBuf> = None;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if line.strip_prefix("branch ") == Some(target_ref.as_str()) {
            checked_out = path.clone();
        }
    }
    match checked_out {
        None => {
            git(project, &["update-ref", &target_ref, &tip, &old])?;
            Ok(None)
        }
        Some(dir) => {
            let dirty = git(&dir, &["status", "--porcelain"]).map(|s| !s.is_empty());
            if dirty.unwrap_or(true) {
                return Ok(Some(format!(
                    "{target} is checked out with uncommitted changes in {}, which swarm never touches; the result is on {integration}: commit or stash there, then `git merge --ff-only {integration}`",
                    dir.display()
                )));
            }
            if git_ok(&dir, &["merge", "-q", "--ff-only", &tip]) {
                Ok(None)
            } else {
                Ok(Some(format!(
                    "could not fast-forward {target} in {}; the result is on {integration}",
                    dir.display()
                )))
            }
        }
    }
}

/// Removes the team's integration worktree (a checkout of committed work only), and its
/// branch when the target has all of it; otherwise the branch stays, and the line
/// returned says so. `None` when the team never merged anything.
pub fn remove_integration(store: &Store) -> Option<String> {
    let queue = store.merge_queue().load().ok()?;
    let git_dir = queue.git_dir?;
    let project = project_dir(&git_dir);
    let wt = integration_path(&git_dir, store.team());
    if wt.exists() {
        let _ = git(
            &project,
            &["worktree", "remove", "--force", &wt.to_string_lossy()],
        );
        let _ = std::fs::remove_dir_all(&wt);
        let _ = git(&project, &["worktree", "prune"]);
    }
    let branch = integration_branch(store.team());
    let head = rev(&project, &format!("refs/heads/{branch}"))?;
    let landed = queue
        .target
        .as_deref()
        .and_then(|t| rev(&project, &format!("refs/heads/{t}")))
        .is_some_and(|t| is_ancestor(&project, &head, &t));
    if landed {
        let _ = git(&project, &["branch", "-D", &branch]);
        None
    } else {
        Some(format!(
            "kept branch {branch}: it holds merged work that is not on {} yet (`git merge --ff-only {branch}` there)",
            queue.target.as_deref().unwrap_or("the target")
        ))
    }
}

/// Removes the kept worktree and branch of each merged entry whose every change is
/// reachable from the target (through `team::worktree::remove`, as its teammate's stop
/// would have); a worktree in use, with uncommitted files, or whose work landed as new
/// commits (rebase, squash) stays.
fn tidy(
    store: &Store,
    project: &Path,
    target_commit: &str,
    entries: &[Entry],
    dirs: &swarm_config::project::UserDirs,
) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(records) = store.worktrees().all_worktrees() else {
        return removed;
    };
    for r in records {
        let landed = entries
            .iter()
            .any(|e| e.branch == r.branch && e.state == EntryState::Merged);
        let head = rev(project, &format!("refs/heads/{}", r.branch));
        let reachable = head.is_some_and(|h| is_ancestor(project, &h, target_commit));
        if r.state != worktrees::RecordState::Kept || !landed || !reachable {
            continue;
        }
        let Ok(_guard) = store.worktrees().lock_worktree(&r.agent) else {
            continue;
        };
        let clean = crate::settle::inspect(store, &r, dirs).is_ok_and(|c| c.files == 0);
        if clean && crate::settle::discard(store, &r, dirs).is_ok() {
            let _ = store
                .roster()
                .update_member(&r.agent, |m| m.worktree_path = None);
            removed.push(format!(
                "removed {}'s worktree {} and branch {} (merged)",
                r.agent,
                r.path.display(),
                r.branch
            ));
        }
    }
    removed
}
