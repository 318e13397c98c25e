"""The `merge` suite of scripts/bench: `swarm merge` landing 16 teammate branches of 10
commits each onto the target, one at a time, with a trivial check after each merge.

The branches and their worktree records are made directly (git, and the record format of
crates/store/src/worktrees.rs), as a team of 16 isolated teammates would have left them; each
touches its own files, so nothing conflicts. The figure is the whole `swarm merge` wall
time with the check `true` (whose own cost is a fork and exec per merge), and the same
queue again with no check at all, to show what the gate itself costs.
"""

import json
import os
import subprocess
import sys
import time

BRANCHES = 16
COMMITS = 10


def register(bench):
    global B
    B = bench
    bench.suite("merge")(merge_suite)


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, timeout=60).stdout


def make_team(env, name):
    """A repository with one commit, team `name`, and its 16 teammate branches."""
    repo = os.path.join(env.work, name)
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "swarm bench")
    git(repo, "config", "user.email", "bench@example.com")
    with open(os.path.join(repo, "README"), "w") as f:
        f.write("bench\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    base = git(repo, "rev-parse", "HEAD").strip()
    env.swarm("team", "create", name)
    git_dir = os.path.realpath(os.path.join(repo, ".git"))
    records = os.path.join(env.root, "teams", name, "worktrees")
    os.makedirs(records, exist_ok=True)
    for i in range(BRANCHES):
        agent = f"mate{i:02d}"
        branch = f"swarm/{name}/{agent}"
        path = os.path.join(git_dir, "swarm-worktrees", name, agent)
        git(repo, "worktree", "add", "-q", "-b", branch, path)
        for c in range(COMMITS):
            with open(os.path.join(path, f"{agent}-{c}.txt"), "w") as f:
                f.write(f"{agent} commit {c}\n")
            git(path, "add", ".")
            git(path, "commit", "-q", "-m", f"{agent}: part {c}")
        record = {"agent": agent, "gitDir": git_dir, "path": path, "branch": branch,
                  "name": f"swarm-{name}-{agent}", "base": base, "state": "kept",
                  "createdAt": 0}
        with open(os.path.join(records, f"{agent}.json"), "w") as f:
            json.dump(record, f, indent=2)
    return repo


def timed_merge(env, name, repo, check):
    argv = [B.SWARM, "--team", name, "merge"] + (["--check", check] if check else [])
    start = time.monotonic()
    p = subprocess.run(argv, env=env.env, cwd=repo, capture_output=True, text=True,
                       timeout=600)
    wall = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit(f"bench merge: swarm merge exited {p.returncode}: {p.stderr.strip()}")
    landed = int(git(repo, "rev-list", "--count", "main").strip())
    # 1 starting commit, then per branch its commits and one merge commit.
    want = 1 + BRANCHES * (COMMITS + 1)
    if landed != want:
        raise SystemExit(f"bench merge: main has {landed} commits, expected {want}")
    return wall


def merge_suite():
    env = B.Env()
    figures = {}
    try:
        checked = make_team(env, "checked")
        unchecked = make_team(env, "unchecked")
        figures["merge.branches"] = BRANCHES
        figures["merge.commits_per_branch"] = COMMITS
        figures["merge.wall_s"] = round(timed_merge(env, "checked", checked, "true"), 2)
        figures["merge.wall_no_check_s"] = round(timed_merge(env, "unchecked", unchecked, None), 2)
        figures["merge.per_branch_ms"] = round(figures["merge.wall_s"] * 1000 / BRANCHES, 1)
    finally:
        env.close()
    B.target("merge.wall_s", "<= 5")
    print(f"bench merge: {BRANCHES} branches of {COMMITS} commits landed in "
          f"{figures['merge.wall_s']} s with a check after each, "
          f"{figures['merge.wall_no_check_s']} s without", file=sys.stderr)
    return figures
