"""The `serve` suite of scripts/bench: `swarm serve` watching a team of 16 real teammates
(spawned in tmux against the scripted model) with 5 event-stream clients.

- Update latency: a load process writes 100 messages to a teammate's inbox through the
  store, 150 ms apart, noting the time before each write; each client notes when the
  feed event carrying it arrives. p50/p99 over every (client, message).
- Idle cost: the server's RSS and CPU over 30 s while the 5 clients stay connected and
  the team sits idle (the server still looks at it every second and captures its 17
  panes for the clients).
- First paint: headless Chromium (when chromium and chromedriver are on PATH) loads the
  page 5 times; the figures are the median first contentful paint and the median time
  until the team's members are drawn (the page's `swarm-team-shown` mark), both from the
  start of navigation.
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import threading
import time
import urllib.request

CLIENTS = 5
MESSAGES = 100
GAP_MS = 150
IDLE_S = 30


def register(bench):
    global B
    B = bench
    bench.suite("serve")(serve_suite)


class Stream:
    """One event-stream client: notes when each probe message first shows in a feed event."""

    def __init__(self, host, port, session):
        self.seen = {}
        self.members = 0
        self.sock = socket.create_connection((host, port), timeout=120)
        self.sock.sendall((f"GET /api/teams/bench/events HTTP/1.1\r\nhost: {host}:{port}\r\n"
                           f"x-swarm-session: {session}\r\naccept: text/event-stream\r\n\r\n").encode())
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        probe = re.compile(r'"line":"probe-(\d+)"')
        f = self.sock.makefile("rb")
        event = None
        try:
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "feed":
                    now = time.time_ns()
                    for n in probe.findall(line):
                        self.seen.setdefault(int(n), now)
                elif line.startswith("data:") and event == "members":
                    self.members = len(json.loads(line[5:]))
        except OSError:
            pass

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def login(base, token):
    """The session key `GET /?token=` redirects to (`/#session=KEY`), which the page sends in a header."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(f"{base}?token={token}", timeout=10)
    except urllib.error.HTTPError as e:
        to = e.headers["location"] or ""
        if to.startswith("/#session="):
            return to[len("/#session="):]
    raise SystemExit("bench: swarm serve did not answer the token with a session")


def webdriver(base_url, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base_url + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["value"]


def first_paint(env, page):
    """Median first contentful paint and time to the team drawn, in ms; None without Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("bench: no chromium/chromedriver: first paint not measured", file=os.sys.stderr)
        return None, None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.popen([driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    B.wait_for(lambda: _up(url), 30, "chromedriver")
    profile = os.path.join(env.dir, "chromium-profile")
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1000"]
    session = webdriver(url, "POST", "/session", {"capabilities": {"alwaysMatch": {
        "browserName": "chrome", "goog:chromeOptions": {"binary": chromium, "args": args}}}})["sessionId"]
    s = f"/session/{session}"
    try:
        webdriver(url, "POST", s + "/url", {"url": page})  # trades the token for a session in this tab
        base = page.split("?")[0]
        fcp, shown = [], []
        for _ in range(5):
            webdriver(url, "POST", s + "/url", {"url": "about:blank"})
            webdriver(url, "POST", s + "/url", {"url": base})
            script = ("const p = performance.getEntriesByName('first-contentful-paint')[0];"
                      "const m = performance.getEntriesByName('swarm-team-shown')[0];"
                      "return [p ? p.startTime : null, m ? m.startTime : null];")
            deadline = time.monotonic() + 30
            while True:
                paint, mark = webdriver(url, "POST", s + "/execute/sync", {"script": script, "args": []})
                if paint is not None and mark is not None:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("bench: the page never drew the team")
                time.sleep(0.02)
            fcp.append(paint)
            shown.append(mark)
        return round(statistics.median(fcp), 1), round(statistics.median(shown), 1)
    finally:
        webdriver(url, "DELETE", s)


def _up(url):
    try:
        urllib.request.urlopen(url + "/status", timeout=2)
        return True
    except OSError:
        return False


def serve_suite():
    figures = {}
    env = B.Env()
    streams = []
    try:
        url = env.model_server({"default": {"text": "Nothing to do."}})
        _, names = B.spawn_team(env, url, 16)
        serve = env.popen([B.SWARM, "serve", "--team", "bench", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = serve.stdout.readline().strip()
        if "?token=" not in line:
            raise SystemExit(f"bench: swarm serve printed {line!r}")
        base, token = line.split("?token=")
        host, port = base[len("http://"):].rstrip("/").split(":")
        session = login(base, token)
        streams = [Stream(host, int(port), session) for _ in range(CLIENTS)]
        B.wait_for(lambda: all(s.members == 17 for s in streams), 60, "the clients to see 17 members")
        time.sleep(3)

        sender = env.stress("timed", "bench", "probe", names[0], str(MESSAGES), str(GAP_MS))
        out, err = sender.communicate(timeout=120)
        if sender.returncode != 0:
            raise SystemExit(f"bench: the load process failed: {err.strip()}")
        started = {}
        for row in out.splitlines():
            text, start_ns = row.split()
            started[int(text.split("-")[1])] = int(start_ns)
        B.wait_for(lambda: all(len(s.seen) >= MESSAGES for s in streams), 10, "every probe on every client")
        latencies = [(s.seen[n] - t) / 1e6 for s in streams for n, t in started.items() if n in s.seen]
        figures["serve.update_latency_p50_ms"] = round(B.percentile(latencies, 50), 1)
        figures["serve.update_latency_p99_ms"] = round(B.percentile(latencies, 99), 1)
        figures["serve.updates_lost"] = CLIENTS * MESSAGES - len(latencies)
        B.target("serve.update_latency_p99_ms", "<= 250")
        B.target("serve.updates_lost", "0")

        time.sleep(5)  # the teammates answer the probes; then all is quiet
        ticks0, t0 = B.cpu_ticks(serve.pid), time.monotonic()
        time.sleep(IDLE_S)
        ticks1, t1 = B.cpu_ticks(serve.pid), time.monotonic()
        hz = os.sysconf("SC_CLK_TCK")
        figures["serve.idle_cpu_pct"] = round((ticks1 - ticks0) / hz / (t1 - t0) * 100, 2)
        figures["serve.rss_mb"] = round(B.rss_mb(serve.pid), 1)
        B.target("serve.idle_cpu_pct", "<= 2")
        B.target("serve.rss_mb", "<= 30")

        fcp, shown = first_paint(env, f"{base}?token={token}")
        if fcp is not None:
            figures["serve.first_paint_ms"] = fcp
            figures["serve.team_shown_ms"] = shown
    finally:
        for s in streams:
            s.close()
        env.close()
    return figures
