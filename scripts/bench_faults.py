"""The `faults` suite of scripts/bench: the store under crashes, a full disk and stuck lock
holders, on the release binary, each scenario on a private root. It counts what went wrong;
like every suite it asserts nothing.

  sends      concurrent `swarm send`s to one inbox, run once without kills and once with
             random SIGKILLs in each sender's first milliseconds: lost (exited 0, not in the
             inbox exactly once), duplicated, ghost (exited non-zero, not killed, yet
             delivered), failed surviving senders, and the wall time with kills over without
  claims     concurrent `swarm task next` with random kills: double claims (a task two
             successful claimers got, or whose file names another owner than its one)
  edges      `task add --blocked-by`, `task update --blocked-by/--blocks` with random kills,
             then one `swarm task list`: edges written on one side only
  diskfull   send, inbox --ack, task and roster writes on a full tmpfs (root only; skipped
             with a message when the mount fails), then space freed and mail moved again:
             ghost deliveries, lost acknowledged messages, files that no longer parse
  stopped    a SIGSTOPped inbox lock holder (a `lock.*` fault point with `:stop` if the
             source has one, else `swarm-stress hold`): what other senders see (exit 5 in
             their lock timeout), and that they succeed once it is gone
  deadowner  a sender killed between `mkdir <inbox>.lock/` and its lock record
             (SWARM_FAULT=lock.after_mkdir:kill, or that state made by hand if the point does
             not exist yet): how long the next sender takes; and the same after a holder
             killed once its lock directory was refreshed (held over 2 s)
  attacks    the adversarial host suite (crates/store-pg/tests/contract/host_rights.rs):
             a row per attempt of a hostile host with a database role of its own, each
             refused or without effect (PostgreSQL only)

Every scenario ends with a scan for JSON files under its root that do not parse.
SWARM_FAULTS_SCALE (default 1) multiplies the trial counts; SWARM_FAULTS_SEED replays
the random kills (the seed is printed).
"""
import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import bench_store_pg  # the database restarts: a private PostgreSQL server

B = None  # the bench module: Env, target, SWARM, STRESS, percentile

SCALE = float(os.environ.get("SWARM_FAULTS_SCALE", "1"))
SEED = int(os.environ.get("SWARM_FAULTS_SEED", str(time.time_ns() % 2**31)))
# The share of operations that get a SIGKILL scheduled; some land after the exit.
KILL_CHANCE = 0.6
OP_TIMEOUT = 120


def register(bench):
    global B
    B = bench
    bench.suite("faults")(faults_suite)


def scaled(count):
    return max(1, round(count * SCALE))


def log(text):
    print(f"bench faults: {text}", file=sys.stderr)


class Op:
    """One process: argv, the key it handles, when to kill it, and what came of it."""

    def __init__(self, argv, key=None, delay=None, env=None, fine=(0,)):
        self.argv, self.key, self.delay, self.env = argv, key, delay, env
        self.fine = fine  # exit codes that are an answer, not a failure
        self.rc, self.out, self.err, self.secs = None, "", "", 0.0

    @property
    def killed(self):
        return self.rc == -signal.SIGKILL

    @property
    def failed(self):
        """Exited non-zero on its own (a kill is not a failure; a hang is)."""
        return self.rc is None or (self.rc > 0 and self.rc not in self.fine) or (self.rc < 0 and not self.killed)


def run_ops(env, ops, slots):
    """Runs `ops`, `slots` at a time; an op with a delay is SIGKILLed that long after its
    exec. Returns the wall time in seconds."""

    def one(op):
        start = time.perf_counter()
        p = env.popen(op.argv, env=op.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      text=True)
        if op.delay is not None:
            time.sleep(op.delay)
            # Not reaped yet: if it already exited, the signal hits a zombie and is lost.
            os.kill(p.pid, signal.SIGKILL)
        try:
            op.out, op.err = p.communicate(timeout=OP_TIMEOUT)
            op.rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            op.out, op.err = p.communicate()
            op.rc = None
        op.secs = time.perf_counter() - start

    start = time.monotonic()
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(one, ops))
    return time.monotonic() - start


def log_failures(what, ops):
    """Says how the operations that failed on their own failed: exit code and message."""
    why = collections.Counter(
        (op.rc, re.sub(r"/tmp/swarm-bench-[^/]+|[0-9a-f-]{36}|\b[0-9a-f]{8}\b|\d+(\.\d+)?(µs|ms|s)?\b", "…", (op.err.strip().splitlines() or [""])[-1])[:140])
        for op in ops if op.failed)
    for (rc, msg), n in why.most_common(5):
        log(f"{what}: {n} exited {rc}: {msg}")


def kill_window(ops):
    """Kills land in the first milliseconds: up to the 90th percentile of a clean run."""
    return B.percentile([op.secs for op in ops if op.rc == 0] or [0.01], 90)


def plan_kills(rng, ops, window):
    for op in ops:
        if rng.random() < KILL_CHANCE:
            op.delay = rng.uniform(0, window)


def team(env, name, members):
    env.swarm("team", "create", name)
    for m in members:
        env.swarm("--team", name, "team", "add", m)


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def inbox_texts(root, team_name, agent):
    inbox = read_json(os.path.join(root, "teams", team_name, "inboxes", f"{agent}.json"), [])
    return [e.get("text") for e in inbox if isinstance(e, dict)]


def delivered_texts(root, team_name, agent):
    """The acknowledged log, skipping lines that do not parse (a torn append)."""
    path = os.path.join(root, "teams", team_name, "inboxes", f"{agent}.delivered.jsonl")
    texts = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    texts.append(json.loads(line).get("text"))
                except ValueError:
                    pass
    except OSError:
        pass
    return texts


def corrupt_files(root):
    """JSON files under `root` that do not parse, and JSONL logs with a bad line before
    their last (a torn last line is a crash mid-append, which readers skip)."""
    bad = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if name.endswith(".json"):
                    json.loads(data)
                elif name.endswith(".jsonl"):
                    for line in data.split(b"\n")[:-1]:
                        if line.strip():
                            json.loads(line)
            except (OSError, ValueError):
                bad.append(os.path.relpath(path, root))
    if bad:
        log(f"files that do not parse: {', '.join(sorted(bad))}")
    return len(bad)


def one_sided_edges(root, team_name):
    """Edges on one side only: A.blockedBy has B but B.blocks lacks A, or the reverse."""
    tasks_dir = os.path.join(root, "tasks", team_name)
    tasks = {}
    for name in os.listdir(tasks_dir):
        if name.endswith(".json") and name[:-5].isdigit():
            t = read_json(os.path.join(tasks_dir, name))
            if isinstance(t, dict):
                tasks[t["id"]] = t
    found = 0
    for tid, t in tasks.items():
        found += sum(1 for b in t.get("blockedBy", []) if b in tasks and tid not in tasks[b].get("blocks", []))
        found += sum(1 for c in t.get("blocks", []) if c in tasks and tid not in tasks[c].get("blockedBy", []))
    return found


def fault_points():
    points = set()
    for top in ("src", "crates"):
        for dirpath, _, names in os.walk(os.path.join(B.REPO, top)):
            for name in names:
                if name.endswith(".rs"):
                    with open(os.path.join(dirpath, name)) as f:
                        points.update(re.findall(r'fault::point\("([^"]+)"\)', f.read()))
    if not points:
        sys.exit("bench faults: found no fault::point(...) under src/ or crates/; the scenarios that need them would measure something else")
    return points


def sends(rng, figures):
    count, slots = scaled(1000), 8
    senders = [f"s{i}" for i in range(slots)]
    env = B.Env()
    try:
        results = {}
        for name in ("clean", "kills"):
            team(env, name, senders + ["sink"])
            ops = [Op([B.SWARM, "--team", name, "send", "sink", f"m{i}", "--from", senders[i % slots]],
                      key=f"m{i}") for i in range(count)]
            if name == "kills":
                plan_kills(rng, ops, kill_window(results["clean"][0]))
            wall = run_ops(env, ops, slots)
            # The next sender commits whatever a killed one left in the spool.
            r = subprocess.run([B.SWARM, "--team", name, "send", "sink", "final", "--from", "s0"],
                               env=env.env, capture_output=True, text=True, timeout=OP_TIMEOUT)
            if r.returncode != 0:
                log(f"the sender after the {name} run exited {r.returncode}: {r.stderr.strip()}")
            results[name] = (ops, wall, collections.Counter(inbox_texts(env.root, name, "sink")))
        lost = dup = ghosts = failed = kills = 0
        for name, (ops, _, seen) in results.items():
            log_failures(f"sends ({name})", ops)
            lost += sum(1 for op in ops if op.rc == 0 and seen[op.key] != 1)
            dup += sum(1 for k, c in seen.items() if c > 1)
            ghosts += sum(1 for op in ops if op.failed and seen[op.key] > 0)
            failed += sum(1 for op in ops if op.failed)
            kills += sum(1 for op in ops if op.killed)
        figures.update({
            "faults.send_trials": 2 * count, "faults.send_kills": kills, "faults.send_lost": lost,
            "faults.send_duplicated": dup, "faults.send_ghosts": ghosts,
            "faults.send_failed_survivors": failed,
            "faults.send_wall_s": round(results["clean"][1], 2),
            "faults.send_wall_kills_s": round(results["kills"][1], 2),
            "faults.kill_slowdown": round(results["kills"][1] / results["clean"][1], 2),
            "faults.send_corrupt": corrupt_files(env.root),
        })
    finally:
        env.close()


def claims(rng, figures):
    count, slots = scaled(200), 8
    agents = [f"c{i}" for i in range(32)]
    env = B.Env()
    try:
        team(env, "bench", agents)
        B.wait_all([env.stress("mktasks", "bench", str(count))])
        # `task next` exits 10 when nothing is ready: the list ran out, not a failure.
        ops = [Op([B.SWARM, "--team", "bench", "--json", "task", "next", "--as", agents[i % len(agents)]],
                  key=agents[i % len(agents)], fine=(0, 10)) for i in range(2 * count)]
        run_ops(env, ops[:slots], slots)  # unkilled: the kill window
        plan_kills(rng, ops[slots:], kill_window(ops[:slots]))
        run_ops(env, ops[slots:], slots)
        log_failures("claims", ops)
        winners = collections.defaultdict(list)
        for op in ops:
            if op.rc == 0 and op.out.strip() not in ("", "null"):
                winners[json.loads(op.out)["id"]].append(op.key)
        double = sum(1 for ids in winners.values() if len(ids) > 1)
        for tid, who in winners.items():
            task = read_json(os.path.join(env.root, "tasks", "bench", f"{tid}.json"), {})
            if len(who) == 1 and task.get("owner") != who[0]:
                double += 1
        figures.update({
            "faults.claim_trials": len(ops), "faults.claim_kills": sum(op.killed for op in ops),
            "faults.double_claims": double,
            "faults.claim_failed_survivors": sum(op.failed for op in ops),
            "faults.claim_corrupt": corrupt_files(env.root),
        })
    finally:
        env.close()


def edges(rng, figures):
    count, slots, base = scaled(400), 4, 30
    env = B.Env()
    try:
        team(env, "bench", ["worker"])
        B.wait_all([env.stress("mktasks", "bench", str(base))])
        ops = []
        for i in range(count):
            # Blockers always have the lower id: a cycle refusal would muddle the count.
            lo, hi = sorted(rng.sample(range(1, base + 1), 2))
            kind = rng.choice(("add", "blocked-by", "blocks"))
            if kind == "add":
                argv = ["task", "add", f"e{i}", "--blocked-by", str(lo), "--blocked-by", str(hi)]
            elif kind == "blocked-by":
                argv = ["task", "update", str(hi), "--blocked-by", str(lo)]
            else:
                argv = ["task", "update", str(lo), "--blocks", str(hi)]
            ops.append(Op([B.SWARM, "--team", "bench", *argv]))
        run_ops(env, ops[:slots], slots)
        plan_kills(rng, ops[slots:], kill_window(ops[:slots]))
        run_ops(env, ops[slots:], slots)
        log_failures("edges", ops)
        env.swarm("--team", "bench", "task", "list")
        figures.update({
            "faults.edge_trials": len(ops), "faults.edge_kills": sum(op.killed for op in ops),
            "faults.one_sided_edges": one_sided_edges(env.root, "bench"),
            "faults.edge_failed_survivors": sum(op.failed for op in ops),
            "faults.edge_corrupt": corrupt_files(env.root),
        })
    finally:
        env.close()


def fill(mount, leave):
    """Fills the file system at `mount` but for about `leave` bytes."""
    path = os.path.join(mount, "filler")
    with open(path, "ab", buffering=0) as f:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while f.write(b"\0" * chunk):
                    pass
            except OSError:
                pass
    size = os.path.getsize(path)
    os.truncate(path, max(0, size - leave))


def disk_full(figures):
    env = B.Env()
    try:
        mount = os.path.join(env.dir, "tmpfs")
        os.makedirs(mount)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mount],
                           capture_output=True, text=True)
        if r.returncode != 0:
            log(f"skipping the full-disk scenario: cannot mount a tmpfs (needs root): {r.stderr.strip()}")
            return
        env.mounts.append(mount)
        root = os.path.join(mount, "claude")
        env.root = env.env["SWARM_ROOT"] = root
        team(env, "bench", ["s", "sink", "reader"])
        for i in range(3):
            env.swarm("--team", "bench", "task", "add", f"t{i}")
        sends, acks, others, before = [], [], [], []
        for rnd, leave in enumerate((0, 4096, 16384)):
            # Mail to acknowledge on the full disk; after a round, these also show that
            # sending works again once there is space.
            mail = [Op([B.SWARM, "--team", "bench", "send", "reader", f"r{rnd}-{i}", "--from", "s"],
                       key=f"r{rnd}-{i}") for i in range(5)]
            run_ops(env, mail, 1)
            before += mail
            fill(mount, leave)
            sends += [Op([B.SWARM, "--team", "bench", "send", "sink", f"full{rnd}-{i}", "--from", "s"],
                         key=f"full{rnd}-{i}") for i in range(5)]
            acks.append(Op([B.SWARM, "--team", "bench", "--json", "inbox", "reader", "--ack"],
                           key=[op.key for op in mail if op.rc == 0]))
            others += [Op([B.SWARM, "--team", "bench", *argv]) for argv in (
                ["task", "add", f"full{rnd}"], ["task", "update", "2", "--blocked-by", "1"],
                ["task", "claim", "3", "--as", "s"], ["task", "update", "3", "--status", "pending", "--owner", ""],
                ["team", "add", f"m{rnd}"])]
            run_ops(env, sends[-5:] + acks[-1:] + others[-5:], 1)
            os.remove(os.path.join(mount, "filler"))
        # Space again: the next send and reads move whatever the failures left behind.
        after = [Op([B.SWARM, "--team", "bench", *argv]) for argv in (
            ["send", "sink", "after", "--from", "s"], ["inbox", "sink"], ["inbox", "reader"],
            ["send", "reader", "after", "--from", "s"], ["task", "list"])]
        run_ops(env, after, 1)
        seen = set(inbox_texts(root, "bench", "sink")) | set(delivered_texts(root, "bench", "sink"))
        live = set(inbox_texts(root, "bench", "reader"))
        logged = set(delivered_texts(root, "bench", "reader"))
        lost_acked = 0
        for op in acks:
            printed = {e.get("text") for e in json.loads(op.out)} if op.rc == 0 and op.out.strip() else set()
            for key in op.key:
                gone = key not in live and key not in logged
                lost_acked += gone or (key in printed and key not in logged)
        ops = sends + acks + others
        log_failures("full disk", ops)
        log_failures("after the full disk", before + after)
        unclean = [op for op in ops if op.rc is None or op.rc == 101 or "panicked" in op.err]
        figures.update({
            "faults.diskfull_ops": len(ops),
            "faults.diskfull_failed": sum(op.failed for op in ops),
            "faults.diskfull_unclean": len(unclean),
            "faults.diskfull_ghosts": sum(1 for op in sends if op.failed and op.key in seen),
            "faults.diskfull_lost_acked": lost_acked,
            "faults.diskfull_after_failed": sum(op.failed for op in before + after),
            "faults.diskfull_corrupt": corrupt_files(root),
        })
    finally:
        env.close()


def stopped_holder(points, figures):
    env = B.Env()
    try:
        senders = [f"s{i}" for i in range(8)]
        team(env, "bench", senders + ["sink"])
        inbox = os.path.join(env.root, "teams", "bench", "inboxes", "sink.json")
        point = next((p for p in ("lock.held", "lock.after_record", "lock.after_mkdir") if p in points),
                     None)
        if point:
            holder = env.popen([B.SWARM, "--team", "bench", "send", "sink", "held", "--from", "s0"],
                               env={**env.env, "SWARM_FAULT": f"{point}:stop"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            log(f"stopped holder: a send stopped by SWARM_FAULT={point}:stop")
        else:
            holder = env.stress("hold", "bench", "sink")
            holder.stdout.readline()
            os.kill(holder.pid, signal.SIGSTOP)
            log("stopped holder: no lock.* fault point yet; swarm-stress hold, then SIGSTOP")
        B.wait_for(lambda: proc_state(holder.pid) == "T", 10, "the lock holder to stop")
        if not os.path.isdir(inbox + ".lock"):
            log("the stopped holder does not hold the inbox's lock directory")
        timeout_ms = 2000
        short = {**env.env, "SWARM_LOCK_TIMEOUT_MS": str(timeout_ms)}
        blocked = [Op([B.SWARM, "--team", "bench", "send", "sink", f"w{i}", "--from", s], key=f"w{i}", env=short)
                   for i, s in enumerate(senders)]
        run_ops(env, blocked, len(blocked))
        log_failures("senders behind the stopped holder", blocked)
        # A stopped send resumes and finishes; `hold` would hold on forever, so it is killed
        # as it is (a stopped process takes SIGKILL too).
        if point:
            os.kill(holder.pid, signal.SIGCONT)
        else:
            holder.kill()
        holder.wait(timeout=OP_TIMEOUT)
        first = Op([B.SWARM, "--team", "bench", "send", "sink", "a-first", "--from", "s0"], key="a-first")
        run_ops(env, [first], 1)
        after = [first] + [Op([B.SWARM, "--team", "bench", "send", "sink", f"a{i}", "--from", s], key=f"a{i}")
                           for i, s in enumerate(senders)]
        run_ops(env, after[1:], len(after) - 1)
        log_failures("senders after the holder", after)
        seen = set(inbox_texts(env.root, "bench", "sink"))
        figures.update({
            "faults.stopped_writers": len(blocked),
            "faults.stopped_clean_timeouts": sum(op.rc == 5 for op in blocked),
            "faults.stopped_other_exits": sum(op.rc != 5 for op in blocked),
            "faults.stopped_wait_max_s": round(max(op.secs for op in blocked), 2),
            "faults.stopped_recovery_s": round(first.secs, 2),
            "faults.stopped_ghosts": sum(1 for op in blocked if op.failed and op.key in seen),
            "faults.stopped_after_failed": sum(op.failed or op.key not in seen for op in after),
            "faults.stopped_corrupt": corrupt_files(env.root),
        })
    finally:
        env.close()


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def dead_owner(points, figures):
    env = B.Env()
    try:
        team(env, "bench", ["s", "sink"])
        inbox = os.path.join(env.root, "teams", "bench", "inboxes", "sink.json")
        env.swarm("--team", "bench", "send", "sink", "first", "--from", "s")
        use_point = "lock.after_mkdir" in points
        log("dead owner: " + ("SWARM_FAULT=lock.after_mkdir:kill" if use_point else
                              "no lock.after_mkdir point yet; the lock directory made by hand"))
        patient = {**env.env, "SWARM_LOCK_TIMEOUT_MS": "60000"}
        times, failed = [], 0
        for t in range(scaled(2)):
            if use_point:
                r = subprocess.run([B.SWARM, "--team", "bench", "send", "sink", f"dead{t}", "--from", "s"],
                                   env={**env.env, "SWARM_FAULT": "lock.after_mkdir:kill"},
                                   capture_output=True, timeout=OP_TIMEOUT)
                if r.returncode != -signal.SIGKILL:
                    log(f"the dying sender exited {r.returncode} instead of being killed")
            else:
                os.mkdir(inbox + ".lock")
            nxt = Op([B.SWARM, "--team", "bench", "send", "sink", f"next{t}", "--from", "s"], env=patient)
            run_ops(env, [nxt], 1)
            times.append(nxt.secs)
            failed += nxt.failed
        log("dead owner: next sender took " + ", ".join(f"{s:.2f} s" for s in times))
        # A holder killed after its lock directory was first refreshed (every 2 s), with its
        # record written: the next sender should know it for a dead swarm process's at once.
        holder = env.stress("hold", "bench", "sink")
        holder.stdout.readline()
        time.sleep(2.5)
        holder.kill()
        holder.wait()
        nxt = Op([B.SWARM, "--team", "bench", "send", "sink", "after-holder", "--from", "s"], env=patient)
        run_ops(env, [nxt], 1)
        failed += nxt.failed
        log(f"dead holder (killed after 2.5 s): next sender took {nxt.secs:.2f} s")
        figures.update({
            "faults.dead_owner_trials": len(times),
            "faults.dead_owner_recovery_s": round(B.percentile(times, 50), 2),
            "faults.dead_owner_recovery_max_s": round(max(times), 2),
            "faults.dead_holder_recovery_s": round(nxt.secs, 2),
            "faults.dead_owner_next_failed": failed,
            "faults.dead_owner_corrupt": corrupt_files(env.root),
        })
    finally:
        env.close()


def attacks(figures):
    """The adversarial host suite (crates/store-pg/tests/contract/host_rights.rs): a hostile
    host's attempts through SQL with its own database role, and through signed mail and
    URLs, against a real server with per-host roles. A row per attempt: refused (an error)
    or no effect (rows it cannot see); the test fails if any went through."""
    if not bench_store_pg.bin_dir():
        log("faults: attacks skipped: no PostgreSQL (Debian's postgresql package)")
        return
    report = os.path.join(tempfile.mkdtemp(prefix="swarm-attacks-"), "attacks.json")
    run = subprocess.run(
        ["cargo", "test", "--release", "-p", "swarm-store-pg", "--test", "contract", "--",
         "--exact", "host_rights::a_hostile_host_gets_nowhere"],
        cwd=B.REPO, env={**os.environ, "SWARM_ATTACKS_REPORT": report},
        capture_output=True, text=True, timeout=900)
    rows = read_json(report, [])
    figures["faults.attacks_allowed"] = 0 if run.returncode == 0 else 1
    if run.returncode != 0:
        log(f"faults: attacks: the suite failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    for row in rows:
        key = "faults.attack." + re.sub(r"[^a-z0-9]+", "_", row["attempt"].lower()).strip("_")[:48]
        figures[key] = row["outcome"].split(":")[0]
        B.target(key, "refused or no effect")
    figures["faults.attack_attempts"] = len(rows)
    B.target("faults.attack_attempts", ">= 20")
    B.target("faults.attacks_allowed", "0")


def faults_suite():
    log(f"seed {SEED} (SWARM_FAULTS_SEED replays it), scale {SCALE}")
    rng = random.Random(SEED)
    points = fault_points()
    figures = {}
    for name, step in (("sends", lambda: sends(rng, figures)), ("claims", lambda: claims(rng, figures)),
                       ("edges", lambda: edges(rng, figures)), ("diskfull", lambda: disk_full(figures)),
                       ("stopped", lambda: stopped_holder(points, figures)),
                       ("deadowner", lambda: dead_owner(points, figures)),
                       ("restarts", lambda: bench_store_pg.restarts(figures)),
                       ("attacks", lambda: attacks(figures))):
        start = time.monotonic()
        step()
        log(f"{name}: {time.monotonic() - start:.1f} s")
    get = lambda *keys: sum(figures.get(k, 0) for k in keys)
    totals = {
        "faults.trials": get("faults.send_trials", "faults.claim_trials", "faults.edge_trials",
                             "faults.diskfull_ops", "faults.stopped_writers", "faults.dead_owner_trials",
                             "faults.restart_trials"),
        "faults.kills": get("faults.send_kills", "faults.claim_kills", "faults.edge_kills"),
        "faults.lost": get("faults.send_lost", "faults.restart_lost"),
        "faults.duplicated": get("faults.send_duplicated", "faults.restart_duplicated"),
        "faults.ghost_deliveries": get("faults.send_ghosts", "faults.diskfull_ghosts", "faults.stopped_ghosts"),
        "faults.lost_acked": get("faults.diskfull_lost_acked"),
        "faults.one_sided_edges": get("faults.one_sided_edges"),
        "faults.double_claims": get("faults.double_claims", "faults.restart_double_claims"),
        "faults.failed_surviving_writers": get("faults.send_failed_survivors", "faults.claim_failed_survivors",
                                               "faults.edge_failed_survivors", "faults.stopped_after_failed",
                                               "faults.dead_owner_next_failed"),
        "faults.corrupt_files": get(*[k for k in figures if k.endswith("_corrupt")]),
    }
    for key in totals:
        if key not in ("faults.trials", "faults.kills"):
            B.target(key, "0")
    B.target("faults.kill_slowdown", "<= 3")
    B.target("faults.dead_owner_recovery_s", "<= 1")
    B.target("faults.dead_holder_recovery_s", "<= 1")
    B.target("faults.stopped_other_exits", "0")
    B.target("faults.stopped_recovery_s", "<= 1")
    B.target("faults.diskfull_unclean", "0")
    B.target("faults.diskfull_after_failed", "0")
    if "faults.restart_trials" in figures:
        B.target("faults.restart_failed_writers", "0")
    return {**totals, **figures}
