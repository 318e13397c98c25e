"""The `scale` suite of scripts/bench: one team of 64 teammates on one machine, then 128 if
the machine has the memory for it.

The teammates are spawned by one `swarm spawn` naming them all, as a person would, against
the scripted model (which answers every request "ok"); they are ready when each has written
its state as idle with its pid alive (the command's own time is beside it). Then:

- broadcasts: `swarm send '*'` from the lead, one round at a time, each once the team is
  idle again; each recipient's latency runs from just before the send starts to the
  moment its delivered log (where a message goes once the model was given it and
  answered) was appended to, the log's mtime; the p50 and p99 over every recipient of
  every round, the send's own time, and the CPU the team, its tmux server, the model
  server and the send used per round (what the latency is made of on a busy machine);
- its idle CPU, once every teammate has had mail and gone idle again: the utime+stime
  (from /proc/<pid>/stat) the lead and every teammate used over 30 s, as a percentage of
  one core, with the lead's share and a teammate's on its own lines (the team's tmux
  server beside it, apart); and their total RSS;
- `swarm status` and `swarm watch --once`, the median of 5 runs each;
- `swarm shutdown --all`, until it returns, then what is left: teammates' and the lead's
  processes still alive, and tmux panes of the team.

The machine's load average is printed before and after by scripts/bench: idle CPU is
noisy while something else runs.
"""

import os
import statistics
import subprocess
import sys
import time

COUNTS = (64, 128)
ROUNDS = 10
IDLE_WINDOW_S = 30


def register(bench):
    global B
    B = bench
    bench.suite("scale")(scale_suite)


def scale_suite():
    figures = {}
    for count in COUNTS:
        if count > COUNTS[0]:
            per_mate = figures[f"scale.rss{COUNTS[0]}_mb"] / (COUNTS[0] + 1)
            need = per_mate * (count + 1) * 2
            available = mem_available_mb()
            if need > available:
                print(f"bench scale: skipping {count} teammates: about {need:.0f} MB wanted, "
                      f"{available:.0f} MB available", file=sys.stderr)
                continue
        figures.update(team_of(count))
    n = COUNTS[0]
    B.target(f"scale.spawn{n}_ready_s", "<= 2")
    B.target(f"scale.broadcast{n}_p99_ms", "<= 100")
    B.target(f"scale.status{n}_ms", "<= 200")
    B.target(f"scale.shutdown{n}_s", "<= 10")
    B.target(f"scale.orphans{n}", "0")
    B.target(f"scale.idle_cpu{n}_pct", "<= 3")
    return figures


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0


def team_of(count):
    env = B.Env()
    figures = {}
    key = lambda name: f"scale.{name}{count}"  # noqa: E731
    try:
        url = env.model_server({"default": {"text": "ok"}})
        server = env.procs[-1].pid
        names = [f"mate{i}" for i in range(count)]
        ready, command = spawn(env, url, names)
        figures[key("spawn") + "_ready_s"] = round(ready, 2)
        figures[key("spawn_command") + "_s"] = round(command, 2)
        B.wait_for(lambda: "leadProcess" in env.roster("bench"), 30, "the lead to register")
        lead = env.roster("bench")["leadProcess"]["pid"]
        pids = [lead] + [env.state("bench", n)["pid"] for n in names]
        tmux_pid = int(subprocess.run(["tmux", "-L", env.socket, "display", "-p", "#{pid}"],
                                      capture_output=True, text=True, check=True).stdout)
        latencies, sends, cpu = broadcasts(env, names, pids + [tmux_pid, server])
        figures[key("broadcast") + "_p50_ms"] = round(B.percentile(latencies, 50), 1)
        figures[key("broadcast") + "_p99_ms"] = round(B.percentile(latencies, 99), 1)
        figures[key("broadcast_send") + "_ms"] = round(statistics.median(sends), 1)
        figures[key("broadcast_cpu") + "_ms"] = round(cpu, 1)

        # Idle once every teammate has had mail (so each has an inbox file to look at).
        settle(env, names)
        lead_cpu, mates_cpu, tmux_cpu = idle_cpu(pids, tmux_pid)
        figures[key("idle_cpu") + "_pct"] = round(lead_cpu + mates_cpu, 2)
        figures[key("idle_cpu_lead") + "_pct"] = round(lead_cpu, 2)
        figures[key("idle_cpu_per_mate") + "_pct"] = round(mates_cpu / count, 3)
        figures[key("idle_cpu_tmux") + "_pct"] = round(tmux_cpu, 2)
        figures[key("rss") + "_mb"] = round(sum(B.rss_mb(p) for p in pids), 1)
        figures[key("rss_tmux") + "_mb"] = round(B.rss_mb(tmux_pid), 1)

        figures[key("status") + "_ms"] = timed(env, "status")
        figures[key("watch_once") + "_ms"] = timed(env, "watch", "--once")

        start = time.monotonic()
        env.swarm("--team", "bench", "shutdown", "--all", timeout=300)
        figures[key("shutdown") + "_s"] = round(time.monotonic() - start, 2)
        figures[key("orphans")] = orphans(env, {server, lead, tmux_pid})
    finally:
        env.close()
    return figures


def spawn(env, url, names):
    """Seconds from the start of one `swarm spawn` naming every teammate until each is
    idle (registered, watching its inbox) with its pid alive, and until the command
    returned."""
    env.swarm("team", "create", "bench")
    spawn_env = {**env.env, "SWARM_PROVIDER": "scripted", "SWARM_BASE_URL": url}

    def ready(name):
        st = env.state("bench", name)
        return st is not None and st.get("activity") == "idle" and B.pid_alive(st["pid"])

    start = time.monotonic()
    r = subprocess.run([B.SWARM, "--team", "bench", "spawn", *names], env=spawn_env,
                       cwd=env.work, capture_output=True, text=True, timeout=300)
    command = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"bench scale: swarm spawn exited {r.returncode}: {r.stderr.strip()}")
    pending = list(names)
    deadline = time.monotonic() + 120
    while pending:
        pending = [n for n in pending if not ready(n)]
        if time.monotonic() > deadline:
            raise SystemExit(f"bench scale: {len(pending)} teammates never became ready")
        if pending:
            time.sleep(0.01)
    return time.monotonic() - start, command


def idle_cpu(pids, tmux_pid):
    """Percent of one core the lead (`pids[0]`), the teammates (the rest) and the tmux
    server used over the window."""
    hz = os.sysconf("SC_CLK_TCK")
    before = [B.cpu_ticks(p) for p in pids]
    tmux_before = B.cpu_ticks(tmux_pid)
    t0 = time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    after = [B.cpu_ticks(p) for p in pids]
    tmux_after = B.cpu_ticks(tmux_pid)
    wall = time.monotonic() - t0
    if not all(B.pid_alive(p) for p in pids):
        raise SystemExit("bench scale: a teammate or the lead died while idle")
    pct = lambda ticks: ticks / hz / wall * 100  # noqa: E731
    return (pct(after[0] - before[0]), pct(sum(after[1:]) - sum(before[1:])),
            pct(tmux_after - tmux_before))


def settle(env, names):
    """Waits until every teammate is idle, then a few seconds more (the lead's passes, the
    idle notifications it is sent)."""
    B.wait_for(lambda: all((env.state("bench", n) or {}).get("activity") == "idle"
                           for n in names), 60, "the team to be idle", step=0.05)
    time.sleep(3)


def timed(env, *args, runs=5):
    """The median wall time of `swarm --team bench ARGS`, in ms."""
    times = []
    for _ in range(runs):
        start = time.monotonic()
        env.swarm("--team", "bench", *args)
        times.append((time.monotonic() - start) * 1000)
    return round(statistics.median(times), 1)


def broadcasts(env, names, pids):
    """ROUNDS broadcasts from the lead, each once the team is idle again. Returns every
    recipient's latency (ms), each send's own wall time (ms), and the CPU time (ms) the
    processes `pids` and the sends used per round, from each send until every recipient
    had acknowledged (the idle notifications and pane output that follow included only as
    far as they came before that)."""
    inboxes = os.path.join(env.root, "teams", "bench", "inboxes")
    logs = {n: os.path.join(inboxes, f"{n}.delivered.jsonl") for n in names}
    latencies, sends, cpu = [], [], 0
    hz = os.sysconf("SC_CLK_TCK")
    for i in range(ROUNDS):
        settle(env, names)
        text = f"round-{i}"
        ticks = sum(B.cpu_ticks(p) for p in pids)
        children = os.times().children_user + os.times().children_system
        start = time.time_ns()
        t0 = time.monotonic()
        env.swarm("--team", "bench", "send", "*", text, "--from", "team-lead")
        sends.append((time.monotonic() - t0) * 1000)
        pending = dict(logs)
        deadline = time.monotonic() + 60
        while pending:
            for name, path in list(pending.items()):
                if has_line(path, text):
                    latencies.append((os.stat(path).st_mtime_ns - start) / 1e6)
                    del pending[name]
            if time.monotonic() > deadline:
                raise SystemExit(f"bench scale: {len(pending)} teammates never acknowledged {text}")
            if pending:
                time.sleep(0.02)
        ticks = sum(B.cpu_ticks(p) for p in pids) - ticks
        children = os.times().children_user + os.times().children_system - children
        cpu += (ticks / hz + children) * 1000
    return latencies, sends, cpu / ROUNDS


def has_line(path, text):
    """Whether the delivered log at `path` ends with the message `text`."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read()
    except OSError:
        return False
    return f'"text":"{text}"'.encode() in tail


def orphans(env, keep):
    """What `shutdown --all` left of the teammates: processes naming the bench's directory
    (but the model server, the lead and the tmux server, in `keep`) and tmux panes of the
    team but the lead's."""
    procs = [p for p in env.strays() if p not in keep and B.pid_alive(p)]
    panes = subprocess.run(["tmux", "-L", env.socket, "list-panes", "-a", "-F",
                            "#{@swarm-team} #{@swarm-agent}"], capture_output=True,
                           text=True).stdout
    left = [line for line in panes.splitlines()
            if line.split()[:1] == ["bench"] and line.split()[1:] != ["team-lead"]]
    for pid in procs:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().replace(b"\0", b" ").decode(errors="replace")
        print(f"bench scale: left after shutdown: pid {pid}: {argv[:200]}", file=sys.stderr)
    for line in left:
        print(f"bench scale: left after shutdown: a pane of {line}", file=sys.stderr)
    return len(procs) + len(left)
