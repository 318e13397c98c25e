"""The `board` suite of scripts/bench: what an idle team costs as its task list grows
(issue 35 item 4). A lead and one teammate, both idle over a board where nothing can be
claimed: a quarter of the tasks completed, the rest waiting on one task in progress (the
lead's). For 200 and 2,000 tasks on the file store, and with PostgreSQL installed on a
private server too (`board.pg.*`): the CPU the lead and the teammate use over 30 s
(percent of one core), the lead's RSS, and `swarm status`'s time (median of 5). The ratio
of the lead's CPU over 2,000 tasks to its CPU over 200 is beside them.
"""

import json
import os
import statistics
import subprocess
import time

SIZES = (200, 2000)
WINDOW_S = 30


def register(bench):
    global B
    B = bench
    bench.suite("board")(board_suite)


def board_suite():
    import bench_store_pg
    figures = {}
    kinds = [("board", None)]
    if bench_store_pg.bin_dir():
        kinds.append(("board.pg", bench_store_pg))
    for prefix, pg in kinds:
        for n in SIZES:
            figures.update(board_of(n, prefix, pg))
        small, large = figures.get(f"{prefix}.idle_cpu_lead200_pct"), figures.get(f"{prefix}.idle_cpu_lead2000_pct")
        if small and large is not None:
            figures[f"{prefix}.lead_cpu_ratio"] = round(large / max(small, 0.01), 2)
        B.target(f"{prefix}.lead_cpu_ratio", "<= 1.5")
        B.target(f"{prefix}.idle_cpu_lead2000_pct", "<= 1")
        B.target(f"{prefix}.status2000_ms", "<= 1000")
    return figures


def board_docs(n):
    """Task 1 in progress (the lead's), tasks 2..n/4+1 completed, the rest blocked by 1."""
    done = n // 4
    for i in range(1, n + 1):
        doc = {"id": str(i), "subject": f"task {i}", "description": "", "blocks": [], "blockedBy": []}
        if i == 1:
            doc.update(status="in_progress", owner="team-lead",
                       blocks=[str(j) for j in range(done + 2, n + 1)])
        elif i <= done + 1:
            doc.update(status="completed", owner="team-lead")
        else:
            doc.update(status="pending", blockedBy=["1"])
        yield doc


def write_board(env, n):
    tasks = os.path.join(env.root, "tasks", "bench")
    for doc in board_docs(n):
        with open(os.path.join(tasks, f"{doc['id']}.json"), "w") as f:
            json.dump(doc, f, indent=2)


def insert_board(db, n, where):
    """The same board as rows of the team's database (one statement, from a file)."""
    values = ",\n".join(f"('bench', {d['id']}, '{json.dumps(d)}')" for d in board_docs(n))
    sql = os.path.join(where, f"board-{n}.sql")
    with open(sql, "w") as f:
        f.write(f"INSERT INTO tasks (team, id, doc) VALUES\n{values};\n")
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-f", sql],
                   check=True, capture_output=True, timeout=120)


def board_of(n, prefix="board", pg=None):
    env = B.Env()
    figures = {}
    server = None
    try:
        url = env.model_server({"default": {"text": "ok"}})
        if pg:
            server = pg.Server()
            db = pg.Databases(server).new()
            env.swarm("team", "create", "bench", "--store", db)
            insert_board(db, n, env.dir)
        else:
            env.swarm("team", "create", "bench")
            write_board(env, n)
        spawn_env = {**env.env, "SWARM_PROVIDER": "scripted", "SWARM_BASE_URL": url}
        r = subprocess.run([B.SWARM, "--team", "bench", "spawn", "bob"], env=spawn_env,
                           cwd=env.work, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"bench board: swarm spawn exited {r.returncode}: {r.stderr.strip()}")
        # As `swarm status` sees them (on PostgreSQL the states are not files).
        member = lambda name: next((m for m in json.loads(  # noqa: E731
            env.swarm("--json", "--team", "bench", "status").stdout)["members"] if m["name"] == name), {})
        B.wait_for(lambda: member("bob").get("state") == "idle" and member("bob").get("pid"), 60,
                   "bob to be idle", step=0.2)
        B.wait_for(lambda: member("team-lead").get("pid"), 30, "the lead to register", step=0.2)
        time.sleep(5)  # the lead's first passes, bob's idle notification
        lead, bob = member("team-lead")["pid"], member("bob")["pid"]
        hz = os.sysconf("SC_CLK_TCK")
        before = [B.cpu_ticks(p) for p in (lead, bob)]
        t0 = time.monotonic()
        time.sleep(WINDOW_S)
        after = [B.cpu_ticks(p) for p in (lead, bob)]
        wall = time.monotonic() - t0
        pct = lambda i: (after[i] - before[i]) / hz / wall * 100  # noqa: E731
        figures[f"{prefix}.idle_cpu_lead{n}_pct"] = round(pct(0), 2)
        figures[f"{prefix}.idle_cpu_mate{n}_pct"] = round(pct(1), 3)
        figures[f"{prefix}.rss_lead{n}_mb"] = round(B.rss_mb(lead), 1)
        times = []
        for _ in range(5):
            start = time.monotonic()
            env.swarm("--team", "bench", "status")
            times.append((time.monotonic() - start) * 1000)
        figures[f"{prefix}.status{n}_ms"] = round(statistics.median(times), 1)
    finally:
        env.close()
        if server:
            server.close()
    return figures
