"""Teammates on other hosts (`scripts/bench hosts`), simulated on this machine: three hosts
made as tests/integration/sim_hosts.rs makes them (network, mount and UTS namespaces, each
with its own sshd and a key made for the run, the bench's directory hidden there), and a
private PostgreSQL that only their links reach. Each host runs its own scripted model
server on its loopback.

Figures:
- spawn: 3 x 8 teammates started with `swarm spawn --host` (the three hosts at once) until
  all 24 are registered and idle;
- claims: 8 claimers spread over the three hosts (`swarm-stress next`) over 1,000 tasks of a
  team of their own: claims per second, double claims (target 0);
- delivery: 300 messages, 5 ms apart, from a sender on h1 (`swarm-stress timed`) to a
  reader on h2 (`swarm inbox --follow`), through the database: p50 and p99 from the send's
  start to the reader's line (the hosts share this machine's clock), and how many never
  arrived (target 0);
- recovery: a teammate holds a task, and its host's link goes down: the seconds until the
  task is someone else's (heartbeat timeout 3 s for the watcher, `swarm status`).

Needs root, sshd (openssh-server), unshare, nsenter and ip."""
import json
import os
import queue
import threading
import random
import shutil
import subprocess
import sys
import time

import bench_store_pg

B = None

SETUP = r"""set -e
hostname "$HOST_NAME"
mount -t tmpfs tmpfs /run
mkdir -p /run/host /run/sshd /run/host-bin
mount --bind "$HOST_DIR" /run/host
touch /run/host-bin/swarm /run/host-bin/swarm-stress
mount --bind "$SWARM_BIN" /run/host-bin/swarm
mount --bind "$STRESS_BIN" /run/host-bin/swarm-stress
mount -t tmpfs tmpfs "$ENV_DIR"
mount -t tmpfs tmpfs /root
mount -t tmpfs tmpfs /tmp
echo ready
exec sleep 100000"""


def register(bench):
    global B
    B = bench
    bench.suite("hosts")(hosts_suite)


def log(text):
    print(f"bench hosts: {text}", file=sys.stderr, flush=True)


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


class Host:
    """One simulated host; close() takes it and everything in it away."""

    def __init__(self, env, name, public_key):
        self.name = name
        self.dir = os.path.join(env.dir, "hosts", name)
        os.makedirs(self.dir)
        self.holder = subprocess.Popen(
            ["unshare", "--net", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c", SETUP],
            env={"PATH": os.environ["PATH"], "HOST_NAME": f"swarm-bench-{name}", "HOST_DIR": self.dir,
                 "SWARM_BIN": B.SWARM, "STRESS_BIN": B.STRESS, "ENV_DIR": env.dir},
            stdout=subprocess.PIPE, text=True)
        if self.holder.stdout.readline().strip() != "ready":
            raise SystemExit(f"bench: the namespaces of {name} were not made")
        self.pid = str(self.holder.pid)
        used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        while True:
            subnet = f"10.{random.randrange(64, 128)}.{random.randrange(256)}"
            if f"{subnet}." not in used:
                break
        self.gateway, self.address = f"{subnet}.1", f"{subnet}.2"
        self.veth = f"sb{os.getpid() % 100000}{name}"
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.pid)
        sh("ip", "addr", "add", f"{self.gateway}/24", "dev", self.veth)
        sh("ip", "link", "set", self.veth, "up")
        for argv in (["ip", "addr", "add", f"{self.address}/24", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"],
                     ["ip", "link", "set", "lo", "up"], ["ip", "route", "add", "default", "via", self.gateway]):
            sh("nsenter", "-t", self.pid, "-n", "--", *argv)
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, "host_key"))
        with open(os.path.join(self.dir, "authorized_keys"), "w") as f:
            f.write(public_key)
        with open(os.path.join(self.dir, "sshd_config"), "w") as f:
            f.write(f"ListenAddress {self.address}\nPort 22\nHostKey /run/host/host_key\n"
                    "AuthorizedKeysFile /run/host/authorized_keys\nPermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                    "StrictModes no\nPidFile none\n")
        self.sshd = self.inside(["/usr/sbin/sshd", "-D", "-e", "-f", "/run/host/sshd_config"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.makedirs(os.path.join(self.dir, "project"))
        deadline = time.monotonic() + 20
        while subprocess.run(["bash", "-c", f"echo > /dev/tcp/{self.address}/22"],
                             capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise SystemExit(f"bench: the sshd of {name} did not listen")
            time.sleep(0.05)

    def inside(self, argv, **kw):
        """Starts `argv` on the host (its network, mounts and name), with the host's own
        environment, as its login would give it: never this process's (a `SWARM_ROOT` set
        where the bench runs names a directory of this machine, not of the host)."""
        kw.setdefault("env", {"PATH": os.environ["PATH"], "HOME": "/root"})
        return subprocess.Popen(["nsenter", "-t", self.pid, "-n", "-m", "-u", "--", *argv], **kw)

    def model_server(self, script):
        with open(os.path.join(self.dir, "script.json"), "w") as f:
            json.dump(script, f)
        p = self.inside(["/run/host-bin/swarm", "model-server", "--script", "/run/host/script.json"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return p.stdout.readline().strip()

    def cut(self):
        sh("ip", "link", "set", self.veth, "down")

    def close(self):
        mine = os.readlink(f"/proc/{self.pid}/ns/net")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if pid != self.pid and os.readlink(f"/proc/{pid}/ns/net") == mine:
                    os.kill(int(pid), 9)
            except OSError:
                pass
        self.holder.kill()
        self.holder.wait()
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True)


def members(env):
    out = subprocess.run([B.SWARM, "--team", "bench", "status", "--json"], env=env.env, capture_output=True,
                         text=True, timeout=60)
    return json.loads(out.stdout)["members"] if out.returncode == 0 else []


def spawn_figure(env, hosts, ssh_env):
    start = time.monotonic()
    procs = [subprocess.Popen([B.SWARM, "--team", "bench", "spawn", *[f"{h.name}n{i}" for i in range(8)],
                               "--host", h.name], env={**ssh_env, "SWARM_BASE_URL": h.url}, cwd=env.work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for h in hosts]
    for p in procs:
        _, err = p.communicate(timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"bench: a spawn on a host failed: {err.strip()}")
    while True:
        idle = [m for m in members(env) if m["state"] == "idle" and m.get("host")]
        if len(idle) >= 24:
            return round(time.monotonic() - start, 2)
        if time.monotonic() - start > 300:
            raise SystemExit(f"bench: only {len(idle)} of 24 remote teammates became ready")
        time.sleep(0.2)


def claims_figure(env, hosts, url):
    env.swarm("team", "create", "claims", "--store", url)
    B.wait_all([env.stress("mktasks", "claims", "1000")])
    for h in hosts:
        h.inside(["/run/host-bin/swarm", "team", "link", "claims", "--store", url],
                 stdout=subprocess.DEVNULL).wait(timeout=60)
    start = time.monotonic()
    procs = [hosts[i % 3].inside(["/run/host-bin/swarm-stress", "next", "/root/.claude", "claims", f"c{i}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
    claimed = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"bench: a claimer on a host failed: {err.strip()}")
        claimed += out.split()
    wall = time.monotonic() - start
    return round(len(claimed) / wall, 1), len(claimed) - len(set(claimed)), 1000 - len(set(claimed))


def delivery_figure(env, hosts, url, count=300):
    env.swarm("team", "create", "mail", "--store", url)
    env.swarm("--team", "mail", "team", "add", "sink")
    for h in hosts[:2]:
        h.inside(["/run/host-bin/swarm", "team", "link", "mail", "--store", url],
                 stdout=subprocess.DEVNULL).wait(timeout=60)
    follower = hosts[1].inside(["/run/host-bin/swarm", "--team", "mail", "--json", "inbox", "sink", "--follow"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put((line, time.time_ns())) for line in follower.stdout],
                     daemon=True).start()
    time.sleep(1.0)
    sender = hosts[0].inside(["/run/host-bin/swarm-stress", "timed", "/root/.claude", "mail", "team-lead", "sink",
                              str(count), "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    arrived = {}
    deadline = time.monotonic() + 120
    while len(arrived) < count and time.monotonic() < deadline:
        try:
            line, at = lines.get(timeout=1)
        except queue.Empty:
            continue
        arrived[json.loads(line)["text"]] = at
    sent_out, err = sender.communicate(timeout=120)
    follower.kill()
    follower.wait()
    if sender.returncode != 0:
        raise SystemExit(f"bench: the sender on h1 failed: {err.strip()}")
    latencies = []
    for line in sent_out.splitlines():
        text, start_ns = line.split()
        if text in arrived:
            latencies.append((arrived[text] - int(start_ns)) / 1e6)
    if not latencies:
        raise SystemExit("bench: no message from h1 reached the reader on h2")
    return (round(B.percentile(latencies, 50), 2), round(B.percentile(latencies, 99), 2),
            count - len(latencies))


def recovery_figure(env, hosts):
    env.swarm("--team", "bench", "task", "add", "hold it")
    watch = {**env.env, "SWARM_HEARTBEAT_TIMEOUT_MS": "3000"}
    deadline = time.monotonic() + 60
    owner = None
    while owner is None and time.monotonic() < deadline:
        tasks = json.loads(env.swarm("--team", "bench", "--json", "task", "list").stdout)
        owner = next((t.get("owner") for t in tasks if t.get("owner")), None)
        time.sleep(0.1)
    if owner is None:
        raise SystemExit("bench: no remote teammate took the task")
    host = next(h for h in hosts if owner.startswith(h.name))
    host.cut()
    cut = time.monotonic()
    while time.monotonic() - cut < 120:
        subprocess.run([B.SWARM, "--team", "bench", "status"], env=watch, capture_output=True, timeout=60)
        tasks = json.loads(env.swarm("--team", "bench", "--json", "task", "list").stdout)
        now = next((t.get("owner") for t in tasks), None)
        if now != owner:
            return round(time.monotonic() - cut, 2)
        time.sleep(0.1)
    raise SystemExit("bench: the lost host's task never came back")


def hosts_suite():
    if os.geteuid() != 0 or not os.path.exists("/usr/sbin/sshd") or not shutil.which("unshare"):
        raise SystemExit("bench: hosts needs root, sshd (openssh-server) and unshare")
    env = B.Env()
    hosts, server = [], None
    try:
        ssh = os.path.join(env.dir, "ssh")
        os.makedirs(ssh)
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(ssh, "id"))
        with open(os.path.join(ssh, "config"), "w") as f:
            f.write(f"Host *\n  User root\n  IdentityFile {ssh}/id\n  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {ssh}/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n")
        with open(os.path.join(ssh, "id.pub")) as f:
            public = f.read()
        hosts = [Host(env, f"h{i}", public) for i in (1, 2, 3)]
        server = bench_store_pg.Server(listen=[h.gateway for h in hosts])
        url = server.tcp_url(hosts[0].gateway, "postgres")
        ssh_env = {**env.env, "SWARM_SSH_CONFIG": os.path.join(ssh, "config"), "SWARM_PROVIDER": "scripted"}
        for h in hosts:
            # A task held for a while: the recovery figure cuts its host meanwhile.
            h.url = h.model_server({"rules": [{"name": "hold", "delay_ms": 30000, "reply": {"text": "Done."}}]})
            env.swarm("host", "add", h.name, f"root@{h.address}", "--swarm-bin", "/run/host-bin/swarm",
                      "--dir", "/run/host/project")
        env.swarm("team", "create", "bench", "--store", url)
        figures = {"hosts.spawn_3x8_ready_s": spawn_figure(env, hosts, ssh_env)}
        (figures["hosts.claims_per_s"], figures["hosts.double_claims"],
         figures["hosts.unclaimed"]) = claims_figure(env, hosts, url)
        (figures["hosts.delivery_p50_ms"], figures["hosts.delivery_p99_ms"],
         figures["hosts.delivery_lost"]) = delivery_figure(env, hosts, url)
        figures["hosts.recovery_after_cut_s"] = recovery_figure(env, hosts)
    finally:
        for h in hosts:
            h.close()
        if server:
            server.close()
        env.close()
    B.target("hosts.double_claims", "0")
    B.target("hosts.unclaimed", "0")
    B.target("hosts.delivery_p99_ms", "<= 100")
    B.target("hosts.delivery_lost", "0")
    B.target("hosts.recovery_after_cut_s", "<= 5")  # the 3 s timeout, a beat, a look
    return figures
