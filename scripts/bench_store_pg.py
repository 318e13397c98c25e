"""The store suite on PostgreSQL (`scripts/bench store --store URL`, or `--store postgres`
for a private server): the figures the file store gives, on a team whose state is in the
database. Fan-in: 8 processes x 250 sends to one inbox (0 lost); follow: the start of a
send to `swarm inbox --follow` printing it, p50/p99 (300 sends); claims: 8 processes
running `next` over 1,000 tasks (0 double, 0 unclaimed). Each figure is for a fresh
database (a team of its own) on the same server.

`--store postgres` starts Debian's server (initdb into a temporary directory, as the
`postgres` user under root, on a Unix socket only, with its defaults: fsync on, as the
file store's figures are with fsync) and stops it at the end. A URL is used as given; the
bench creates and drops databases `swarm_bench_*` there, so it needs that right."""
import collections
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

B = None  # the bench module


def register(bench):
    global B
    B = bench


def bin_dir():
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return versions[-1] if versions else None


class Server:
    """A private PostgreSQL server, stopped (with its directory) by close()."""

    def __init__(self, listen=()):
        """`listen`: TCP addresses to listen on besides the socket (the lead's side of
        simulated hosts' links), where connections from 10.0.0.0/8 are trusted."""
        bindir = bin_dir()
        if not bindir:
            raise SystemExit("bench: --store postgres needs PostgreSQL (Debian's postgresql package)")
        self.dir = tempfile.mkdtemp(prefix="swarm-bench-pg-")
        as_postgres = os.geteuid() == 0
        prefix = ["setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--"] if as_postgres else []
        if as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        clean = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
        data = os.path.join(self.dir, "data")
        subprocess.run(prefix + [os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
                                 "-E", "UTF8", "--locale=C", "--no-instructions"],
                       env=clean, check=True, capture_output=True, timeout=120)
        if listen:
            with open(os.path.join(data, "pg_hba.conf"), "a") as f:
                f.write("host all all 10.0.0.0/8 trust\n")
        self.port = 5433 + os.getpid() % 20000
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.argv = prefix + [os.path.join(bindir, "postgres"), "-D", data, "-k", self.dir,
                              "-p", str(self.port), "-c", "listen_addresses=" + ",".join(listen),
                              "-c", "max_connections=200"]
        self.clean = clean
        self.start()

    def start(self):
        self.proc = subprocess.Popen(self.argv, env=self.clean, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(self.dir, f".s.PGSQL.{self.port}")):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"bench: postgres did not start; its log is {self.log.name}")
            time.sleep(0.1)
        time.sleep(0.3)  # the socket exists a moment before it accepts

    def crash(self):
        """An immediate shutdown (no checkpoint: crash recovery at the next start)."""
        self.proc.send_signal(signal.SIGQUIT)
        self.proc.wait(timeout=30)

    def tcp_url(self, address, dbname):
        return f"host={address} port={self.port} user=postgres dbname={dbname} sslmode=disable"

    def url(self, dbname):
        return f"host={self.dir} port={self.port} user=postgres dbname={dbname}"

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def psql(url, sql):
    """Runs one statement as the URL's user, with psql (which the server's package brings)."""
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                   check=True, capture_output=True, timeout=60)


class Databases:
    """A fresh database per figure on the server at `base` (a URL naming the database to
    connect to for CREATE DATABASE)."""

    def __init__(self, server=None, url=None):
        self.server, self.base, self.made = server, url, []

    def new(self):
        name = f"swarm_bench_{os.getpid()}_{len(self.made)}"
        admin = self.server.url("postgres") if self.server else self.base
        psql(admin, f"CREATE DATABASE {name}")
        self.made.append(name)
        if self.server:
            return self.server.url(name)
        return f"{self.base} dbname={name}" if "://" not in self.base else self.base.rsplit("/", 1)[0] + "/" + name

    def close(self):
        admin = self.server.url("postgres") if self.server else self.base
        for name in self.made:
            try:
                psql(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            except subprocess.CalledProcessError:
                pass
        if self.server:
            self.server.close()


def team(env, url, members):
    env.swarm("team", "create", "bench", "--store", url)
    for m in members:
        env.swarm("--team", "bench", "team", "add", m)


def fanin(dbs):
    env = B.Env()
    try:
        senders = [f"s{i}" for i in range(8)]
        team(env, dbs.new(), senders + ["sink"])
        start = time.monotonic()
        B.wait_all([env.stress("send", "bench", s, "sink", "250") for s in senders])
        wall = time.monotonic() - start
        out = env.swarm("--team", "bench", "--json", "inbox", "sink").stdout
        texts = [e["text"] for e in json.loads(out)]
        return round(2000 / wall, 1), 2000 - len(set(texts))
    finally:
        env.close()


def follow(dbs):
    env = B.Env()
    try:
        team(env, dbs.new(), ["sink"])
        follower = subprocess.Popen([B.SWARM, "--team", "bench", "--json", "inbox", "sink", "--follow"],
                                    env=env.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    bufsize=1)
        time.sleep(0.5)
        count = 300
        sender = env.stress("timed", "bench", "team-lead", "sink", str(count), "5")
        arrived = {}
        while len(arrived) < count:
            line = follower.stdout.readline()
            if not line:
                break
            arrived[json.loads(line)["text"]] = time.time_ns()
        sent_out, _ = sender.communicate(timeout=120)
        follower.kill()
        follower.wait()
        latencies = []
        for line in sent_out.splitlines():
            text, start_ns = line.split()
            if text in arrived:
                latencies.append((arrived[text] - int(start_ns)) / 1e6)
        return (round(B.percentile(latencies, 50), 2), round(B.percentile(latencies, 99), 2),
                count - len(latencies))
    finally:
        env.close()


def claims(dbs):
    env = B.Env()
    try:
        claimers = [f"c{i}" for i in range(8)]
        team(env, dbs.new(), claimers)
        B.wait_all([env.stress("mktasks", "bench", "1000")])
        start = time.monotonic()
        outs = B.wait_all([env.stress("next", "bench", c) for c in claimers])
        wall = time.monotonic() - start
        claimed = [line for out in outs for line in out.split()]
        return round(len(claimed) / wall, 1), len(claimed) - len(set(claimed)), 1000 - len(set(claimed))
    finally:
        env.close()


def log(text):
    print(f"bench: {text}", file=sys.stderr, flush=True)


def restarts(figures):
    """The fault campaign's database restarts: 8 senders (200 messages each, every one
    logged once acknowledged) and 8 claimers (`next` over 600 tasks) at work on a private
    server that crashes twice (an immediate shutdown) and comes back after a second. Counts
    acknowledged messages lost, copies made twice, tasks claimed twice, writers that failed
    (a call waits up to 10 s for a server it reached), and tasks left held by nobody who
    said so (a claim whose answer was lost with its connection: in doubt, not double)."""
    if not bin_dir():
        log("faults: restarts skipped: no PostgreSQL (Debian's postgresql package)")
        return
    server, env = Server(), B.Env()
    try:
        senders, claimers = [f"s{i}" for i in range(8)], [f"c{i}" for i in range(8)]
        team(env, server.url("postgres"), senders + claimers + ["sink"])
        B.wait_all([env.stress("mktasks", "bench", "600")])
        acked = os.path.join(env.dir, "acked")
        procs = [env.stress("send", "bench", s, "sink", "200", acked) for s in senders]
        procs += [env.stress("next", "bench", c) for c in claimers]
        start = time.monotonic()
        for _ in range(2):
            time.sleep(0.5)
            server.crash()
            time.sleep(1.0)
            server.start()
        outs, failed = [], 0
        for p in procs:
            out, err = p.communicate(timeout=300)
            outs.append(out)
            if p.returncode != 0:
                failed += 1
                log(f"faults: restarts: a writer exited {p.returncode}: {err.strip()[:300]}")
        wall = time.monotonic() - start
        with open(acked) as f:
            sent = f.read().split()
        texts = [e["text"] for e in json.loads(env.swarm("--team", "bench", "--json", "inbox", "sink").stdout)]
        seen = collections.Counter(texts)
        claimed = [line for out in outs[len(senders):] for line in out.split()]
        board = json.loads(env.swarm("--team", "bench", "--json", "task", "list").stdout)
        held = {str(t["id"]) for t in board if t.get("owner")}
        figures.update({
            "faults.restart_trials": len(sent) + len(claimed), "faults.restart_kills": 2,
            "faults.restart_lost": sum(1 for t in sent if seen[t] == 0),
            "faults.restart_duplicated": sum(1 for c in seen.values() if c > 1),
            "faults.restart_double_claims": len(claimed) - len(set(claimed)),
            "faults.restart_failed_writers": failed,
            "faults.restart_claims_in_doubt": len(held - set(claimed)),
            "faults.restart_wall_s": round(wall, 1),
        })
    finally:
        env.close()
        server.close()


def store_figures(store):
    """The store suite's figures on PostgreSQL; `store` is a URL or `postgres`."""
    dbs = Databases(server=Server()) if store == "postgres" else Databases(url=store)
    figures = {}
    try:
        figures["store.pg.fanin_msgs_per_s"], figures["store.pg.fanin_lost"] = fanin(dbs)
        (figures["store.pg.follow_latency_p50_ms"], figures["store.pg.follow_latency_p99_ms"],
         figures["store.pg.follow_lost"]) = follow(dbs)
        (figures["store.pg.claims_per_s"], figures["store.pg.double_claims"],
         figures["store.pg.unclaimed"]) = claims(dbs)
    finally:
        dbs.close()
    B.target("store.pg.fanin_lost", "0")
    B.target("store.pg.follow_latency_p99_ms", "<= 20")
    B.target("store.pg.follow_lost", "0")
    B.target("store.pg.double_claims", "0")
    B.target("store.pg.unclaimed", "0")
    return figures
