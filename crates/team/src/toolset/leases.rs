//! The lease warning a Write or Edit gets: when the changed file is named by another
//! owner's open task, the tool's result says so, naming the task and its owner. Advisory
//! only: the change has already happened.
//!
//! Tasks name project-relative files; an agent's path is made relative to its own working
//! tree's root (the nearest directory above its cwd with a `.git`, so a teammate in a
//! worktree compares like one in the project), else to its cwd.

use std::path::Path;

use swarm_store::Store;
use swarm_store::tasks::leases;

/// The note for `agent` having changed `path` (absolute), if another owner leases it.
pub fn note(store: &Store, agent: &str, cwd: &Path, path: &Path) -> Option<String> {
    let tree = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let relative = path.strip_prefix(tree).ok()?;
    let file = leases::normalize(relative.to_str()?).ok()?;
    // Unreadable tasks mean no warning: a lease never stands in the way of the work.
    let tasks = store.tasks().list().ok()?;
    let holder = leases::leased_to_other(&tasks, &file, agent)?;
    let owner = holder.owner.as_deref()?;
    let owner = owner.split('@').next().unwrap_or(owner);
    Some(format!(
        "note: {file} is leased by task #{} (owner {owner}); coordinate with {owner} before changing it further",
        holder.id
    ))
}
