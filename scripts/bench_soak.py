"""The `soak` suite of scripts/bench: the release binary on a long job under faults, counting
what went wrong. Like every suite it asserts nothing; it exits non-zero only when the team
cannot be started at all.

    scripts/bench soak [--minutes N]    (default 5, or SWARM_SOAK_MINUTES; 60 for a real soak)

The job: `swarm run` against `swarm model-server --script` (every answer after a random
10-500 ms; in the soak, bursts of 429 and 529 with retry-after 1, about one every 45 s), a
scripted lead that spawns 8 teammates and replaces each one that dies (`<name>r`), and
teammates that claim ready tasks by themselves. The bench feeds the stream of tasks (`swarm
task add`, two in five --blocked-by one or two recent tasks, every 12th one doing work that
asks permission), keeping 16-24 open, until N minutes have passed and at least 300 were
made. A sentinel task the bench claims for team-lead keeps the run open until the stream
ends. A teammate does a task by appending `work <id> <name>` to work.log with its Bash tool
(`echo | tee -a`, allowed; `| head` when it must ask), marks it completed and tells team-lead
`Task #<id> done by <name>.` Meanwhile the bench sends numbered notes to team-lead and
numbered pings to random teammates (`swarm send`), and answers each permission request from
two `swarm approve` processes at once (the team runs with --approver human).

The chaos: SIGKILL a random teammate every 20-40 s (SWARM_SOAK_SEED replays the choices);
SIGKILL the lead once, at 20 % of the time (at most 1 minute in), and `swarm resume`; kill
the tmux server once, at 40 % (at most 2 minutes in), and `swarm resume`. First the same job
runs without chaos or bursts for 3 minutes (or the soak's time, if shorter), for the wall
time without faults.

Counted at the end:
  tasks       completed exactly once / twice (two TaskUpdate completions that the model saw
              succeed, from the model server's --log) / never (not completed); work done
              more than once (work.log lines per task: a teammate killed between its work
              and its TaskUpdate leaves a line that the next claimer repeats)
  messages    each note and ping, and each teammate's report in the lead's mailbox, found in
              its recipient's conversation (the committed user turns of its transcript, as
              `swarm resume` restores them, and the mail a compaction took in): lost
              (nowhere, not even unread), duplicated (more than once), unread at the end
              (still in the inbox; each is named, with its recipient's state: a teammate
              killed before it read its mail leaves it there); mailbox entries with the
              same message id
  approvals   resolved twice: both racing `swarm approve`s succeeded, or a teammate got two
              answers to one request
  orphans     processes naming the bench's directory or tmux socket after the run, and panes
              left on its tmux server
  resources   RSS, open file descriptors and CPU of the lead (the first one, from 20 s after
              its start to its kill; the last one, from 20 s after the resume to the end of
              the stream; its RSS while it shuts the team down) and of the teammates that
              lived longest, with the lead's series and what its descriptors are; the model
              server's RSS; the largest inbox (messages, bytes) and its size in each fifth
              of the run; the largest transcript and delivered log; the largest request of
              the lead and of a teammate in each half of the run
  wall time   the time to complete as many tasks as the run without faults did, against its
              time (tasks get slower as the list grows, so equal counts are compared)
SWARM_SOAK_KEEP=DIR copies the soak's directory (root, job, model log) there for a look.
"""
import collections
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

B = None  # the bench module: Env, target, SWARM, OPTIONS

TEAM = "soak"
LEAD = "team-lead"
MATES = [f"mate{i}" for i in range(1, 9)]
MIN_TASKS = 300
BACKLOG = (16, 24)  # open tasks: refill below the first, up to the second
APPROVAL_EVERY = 12
KILL_EVERY = (20, 40)  # seconds between teammate kills
# When the lead and the tmux server are killed: a share of the stream's time, at most so
# many seconds in, so that the run without faults (NOFAULT_MINUTES) covers them.
LEAD_KILL_AT, TMUX_KILL_AT = (0.2, 60), (0.4, 120)
NOFAULT_MINUTES = 3
BURST_EVERY_S = 45  # about one 429/529 burst this often
BURST_MS = 1500
CONTEXT_WINDOW = 50_000  # tokens: small enough that the lead compacts during a soak
SAMPLE_EVERY = 10
WARM_S = 20  # a process's first figures are taken this long after it started
DRAIN_TIMEOUT = 300
SEED = int(os.environ.get("SWARM_SOAK_SEED", str(time.time_ns() % 2**31)))

NOTE = re.compile(r"soak-note \d+\b")
PING = re.compile(r"soak-ping \d+\b")
REPORT = re.compile(r"Task #\d+ done by [A-Za-z0-9_-]+\.")
UPDATED = re.compile(r"Updated task #(\d+) \([^)]*status=completed")
CLAIMED = re.compile(r"(?:You have claimed|Continue) task #(\d+)\b")


def register(bench):
    global B
    B = bench
    bench.suite("soak")(soak_suite)


def log(text):
    print(f"bench soak: {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the job

def call(tool, **input):
    return {"name": tool, "input": input}


def teammate_prompt(name, replaces=None):
    was = f", replacing {replaces}" if replaces else ""
    return f"You are {name}{was}. Claim ready tasks, do them, mark them completed, report each to team-lead."


def job_script(work_log, burst_chance):
    """The model's side of the job (rules are tried in order: crates/model-server/src/script.rs)."""
    rules = []

    def rule(name, **kw):
        rules.append({"name": name, "delay_ms": [10, 500], **kw})

    if burst_chance:
        for status in (429, 529):
            rule(f"burst {status}", chance=burst_chance, burst_ms=BURST_MS,
                 fault={"status": status, "retry_after": "1"})
    rule("summary", user_contains="[swarm compaction]",
         reply={"text": "Summary: soak tasks come and go; each is done, completed and reported. Nothing is pending."})
    rule("lead spawns the team", agent=LEAD, user_contains="Goal:", no_tool_result=True, times=1,
         reply={"text": "Eight teammates take the stream of tasks.",
                "tool_calls": [call("Agent", name=n, description="soak worker", prompt=teammate_prompt(n))
                               for n in MATES]})
    rule("lead replaces a teammate", agent=LEAD, user_regex=r"\b(?P<who>[A-Za-z0-9_-]+) was terminated",
         reply={"text": "{{who}} died: {{who}}r takes its place.",
                "tool_calls": [call("Agent", name="{{who}}r", description="soak worker",
                                    prompt=teammate_prompt("{{who}}r", "{{who}}"))]})
    rule("lead picks another name", agent=LEAD, tool_result_contains="already has a member named",
         user_regex=r"member named '(?P<taken>[A-Za-z0-9_-]+)'",
         reply={"tool_calls": [call("Agent", name="{{taken}}r", description="soak worker",
                                    prompt=teammate_prompt("{{taken}}r"))]})
    rule("lead waits", agent=LEAD, tool_result_contains="Spawned successfully",
         reply={"text": "The team is at work; I wait for news."})
    rule("lead sums up", agent=LEAD, user_contains="All tasks are completed",
         reply={"text": "Done: the stream of soak tasks is complete."})
    rule("lead notes mail", agent=LEAD, reply={"text": "Noted."})

    work = f'echo "work {{{{id}}}} {{{{agent}}}}" | tee -a {work_log}'
    rule("work that asks", user_regex=r"(?s)(?:You have claimed|Continue) task #(?P<id>\d+)\b.*?needs-approval",
         reply={"tool_calls": [call("Bash", command=work + " | head -n 5", description="do task {{id}}")]})
    rule("work", user_regex=r"(?:You have claimed|Continue) task #(?P<id>\d+)\b",
         reply={"tool_calls": [call("Bash", command=work, description="do task {{id}}")]})
    rule("work again", user_regex=r"Task #(?P<id>\d+) is still not completed",
         reply={"tool_calls": [call("Bash", command=work, description="do task {{id}}")]})
    rule("complete", tool_result_contains="work ", user_regex=r"\bwork (?P<id>\d+) [A-Za-z0-9_-]+",
         reply={"tool_calls": [call("TaskUpdate", taskId="{{id}}", status="completed"),
                               call("SendMessage", to=LEAD, summary="task #{{id}} done",
                                    message="Task #{{id}} done by {{agent}}.")]})
    rule("done", tool_result_contains="Message sent to team-lead", reply={"text": "Done."})
    rule("mail", user_contains="New message(s) from your team", reply={"text": "Got it."})
    return {"rules": rules, "default": {"text": "OK."}, "seed": SEED}


class Job:
    """One run of the job on a private root: its processes, its threads and what they saw."""

    def __init__(self, minutes, chaos):
        self.minutes, self.chaos = minutes, chaos
        self.env = B.Env()
        self.job = os.path.join(self.env.dir, "job")
        os.makedirs(self.job)
        self.work_log = os.path.join(self.job, "work.log")
        self.model_log = os.path.join(self.env.dir, "model.jsonl")
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.rng = random.Random(SEED if chaos else SEED + 1)
        self.events = []  # (seconds since start, what happened)
        self.waiter = None  # the `swarm run` or `swarm resume` that waits for the lead
        self.waiters = []  # (argv word, exit code)
        self.expected_exit = False  # the waiter's lead was killed on purpose
        self.early_end = None
        self.created = {}  # task id -> number in the stream
        self.open = set()
        self.sentinel = None
        self.stream_done = None
        self.notes, self.pings = {}, {}  # n -> (recipient, exit code)
        self.approvals = {}  # request id -> exit codes of the two racing approvers
        self.kills = []  # (seconds, name, pid)
        self.lead_back = []  # seconds from a kill to the resumed lead's registration
        self.samples = []
        self.model_pid = None

    def since(self):
        return time.monotonic() - self.start

    def event(self, what):
        with self.lock:
            self.events.append((round(self.since(), 1), what))
        log(f"{self.since():6.1f} s  {what}")

    def swarm(self, *args, timeout=60):
        return subprocess.run([B.SWARM, "--team", TEAM, *args], env=self.env.env, cwd=self.job,
                              capture_output=True, text=True, timeout=timeout)

    # ------------------------------------------------------------------ files

    def team_path(self, *parts):
        return os.path.join(self.env.root, "teams", TEAM, *parts)

    def read_json(self, path):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def task(self, task_id):
        return self.read_json(os.path.join(self.env.root, "tasks", TEAM, f"{task_id}.json"))

    def state(self, name):
        return self.read_json(self.team_path("state", f"{name}.json"))

    def members(self):
        roster = self.read_json(self.team_path("config.json")) or {}
        return [m["name"] for m in roster.get("members", []) if m.get("name") != LEAD]

    def everyone(self):
        """Every agent the team ever had: the roster forgets teammates that finished, their
        transcripts and inboxes stay."""
        names = set(self.members()) | {LEAD}
        for directory, suffix in (("transcripts", ".jsonl"), ("inboxes", ".json")):
            path = self.team_path(directory)
            for f in os.listdir(path) if os.path.isdir(path) else []:
                if f.endswith(suffix) and not f.endswith(".delivered.jsonl"):
                    names.add(f[:-len(suffix)])
        return [LEAD] + sorted(names - {LEAD})

    def ours(self, pid):
        """Whether `pid` is a live process started for this job (its command line names the root)."""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return self.env.dir.encode() in f.read() and B.pid_alive(pid)
        except OSError:
            return False

    def live_pid(self, name):
        s = self.state(name)
        if s and s.get("activity") != "exited" and s.get("pid") and self.ours(s["pid"]):
            return s["pid"]
        return None

    # ------------------------------------------------------------------ the run

    def begin(self, burst_chance):
        url = self.start_model(burst_chance)
        self.start = time.monotonic()
        self.start_ms = time.time() * 1000
        self.deadline = self.start + self.minutes * 60
        argv = [B.SWARM, "--team", TEAM, "run", "Work through the stream of soak tasks.",
                "--teammates", "200", "--no-attach", "--provider", "scripted", "--base-url", url,
                "--cwd", self.job, "--permission-mode", "default", "--approver", "human",
                "--allow", "Bash(echo:*)", "--allow", "Bash(tee:*)",
                "--context-window", str(CONTEXT_WINDOW)]
        self.launch(argv, "run")
        B.wait_for(lambda: os.path.exists(self.team_path("config.json")), 60, "the team to exist", step=0.02)
        self.hold_sentinel()
        threads = [self.stream, self.send_mail, self.approve, self.sample] + ([self.wreak] if self.chaos else [])
        self.threads = [threading.Thread(target=self.guard, args=(t,), daemon=True) for t in threads]
        for t in self.threads:
            t.start()

    def start_model(self, burst_chance):
        path = os.path.join(self.env.dir, "script.json")
        with open(path, "w") as f:
            json.dump(job_script(self.work_log, burst_chance), f)
        p = self.env.popen([B.SWARM, "model-server", "--script", path, "--log", self.model_log],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = p.stdout.readline().strip()
        if not url.startswith("http"):
            raise SystemExit(f"bench soak: the model server did not start (got {url!r})")
        self.model_pid = p.pid
        return url

    def launch(self, argv, word):
        out = open(os.path.join(self.env.dir, f"{word}-{len(self.waiters)}.out"), "w")
        with self.lock:
            self.waiter = self.env.popen(argv, stdout=out, stderr=subprocess.STDOUT)
            self.waiter_word = word
        out.close()

    def guard(self, fn):
        """Runs one of the job's threads; an exception stops the job and is said."""
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 (whatever broke, the run must end and say so)
            self.early_end = self.early_end or f"the bench's {fn.__name__} thread failed: {e!r}"
            self.stop.set()

    def hold_sentinel(self):
        """A task team-lead holds until the stream ends, so the run cannot end between tasks."""
        for _ in range(5):
            r = self.swarm("task", "add", "Soak sentinel: the stream is open",
                           "-d", "The bench holds this for team-lead until it stops adding tasks; nobody works on it.")
            m = re.match(r"#(\d+)", r.stdout)
            if r.returncode == 0 and m and self.swarm("task", "claim", m.group(1), "--as", LEAD).returncode == 0:
                self.sentinel = m.group(1)
                return
        raise SystemExit("bench soak: could not make the sentinel task for team-lead")

    def stream(self):
        k = 0
        recent = []
        while not self.stop.is_set():
            if time.monotonic() >= self.deadline and len(self.created) >= MIN_TASKS:
                break
            for t in list(self.open):
                if (self.task(t) or {}).get("status") == "completed":
                    self.open.discard(t)
            fill = BACKLOG[1] if len(self.open) < BACKLOG[0] else 0
            while len(self.open) < fill:
                k += 1
                deps = self.rng.sample(recent[-10:], min(len(recent[-10:]), self.rng.choice([0, 0, 0, 1, 1, 2])))
                desc = f"Soak task {k}: do its work (one line in work.log), mark it completed, tell team-lead."
                if k % APPROVAL_EVERY == 0:
                    desc += " This one needs-approval: its command asks permission."
                args = ["task", "add", f"Soak task {k}", "-d", desc] + [a for d in deps for a in ("--blocked-by", d)]
                r = self.swarm(*args)
                m = re.match(r"#(\d+)", r.stdout)
                if r.returncode != 0 or not m:
                    self.event(f"task add failed ({r.returncode}): {r.stderr.strip()[:200]}")
                    time.sleep(1)
                    break
                self.created[m.group(1)] = k
                self.open.add(m.group(1))
                recent.append(m.group(1))
            time.sleep(0.2)
        if self.stop.is_set():
            return
        self.stream_done = time.monotonic()
        self.event(f"the stream ends: {len(self.created)} tasks made")
        r = self.swarm("task", "done", self.sentinel)
        if r.returncode != 0:
            self.event(f"failed to complete the sentinel: {r.stderr.strip()}")

    def send_mail(self):
        n = 0
        while not self.stop.is_set() and self.stream_done is None:
            n += 1
            r = self.swarm("send", LEAD, f"soak-note {n}: the bench is still here.")
            self.notes[n] = (LEAD, r.returncode)
            live = [m for m in self.members() if self.live_pid(m)]
            if live and n % 2 == 0:
                to = self.rng.choice(live)
                r = self.swarm("send", to, f"soak-ping {n}: nothing to do, just acknowledge.")
                self.pings[n] = (to, r.returncode)
            self.stop.wait(1.5)

    def approve(self):
        """Answers every pending permission request from two `swarm approve`s at once."""
        directory = self.team_path("approvals")
        while not self.stop.is_set():
            for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
                rid = name[:-5]
                if not name.endswith(".json") or rid in self.approvals:
                    continue
                a = self.read_json(os.path.join(directory, name)) or {}
                if a.get("state") != "pending":
                    continue
                racers = [subprocess.Popen([B.SWARM, "--team", TEAM, "approve", rid], env=self.env.env,
                                           cwd=self.job, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                          for _ in range(2)]
                self.approvals[rid] = [p.wait(timeout=60) for p in racers]
            self.stop.wait(0.25)

    # ------------------------------------------------------------------ chaos

    def wreak(self):
        lead_at = self.start + min(LEAD_KILL_AT[0] * self.minutes * 60, LEAD_KILL_AT[1])
        tmux_at = self.start + min(TMUX_KILL_AT[0] * self.minutes * 60, TMUX_KILL_AT[1])
        lead_done = tmux_done = False
        next_kill = self.start + self.rng.uniform(*KILL_EVERY)
        while not self.stop.is_set() and self.stream_done is None:
            now = time.monotonic()
            if not lead_done and now >= lead_at:
                lead_done = True
                pid = self.live_pid(LEAD)
                if pid:
                    self.event(f"SIGKILL the lead (pid {pid})")
                    self.restart_after(lambda: os.kill(pid, signal.SIGKILL), pid)
            elif not tmux_done and now >= tmux_at:
                tmux_done = True
                pid = self.live_pid(LEAD)
                self.event("kill the tmux server")
                self.restart_after(lambda: subprocess.run(["tmux", "-L", self.env.socket, "kill-server"],
                                                          capture_output=True, timeout=30), pid)
            elif now >= next_kill:
                next_kill = now + self.rng.uniform(*KILL_EVERY)
                live = [(m, self.live_pid(m)) for m in self.members()]
                live = [(m, p) for m, p in live if p]
                if live:
                    name, pid = self.rng.choice(live)
                    os.kill(pid, signal.SIGKILL)
                    self.kills.append((round(self.since(), 1), name, pid))
                    self.event(f"SIGKILL {name} (pid {pid})")
            self.stop.wait(0.2)

    def restart_after(self, kill, old_lead):
        """Kills (the lead or the tmux server), waits for the waiting `swarm run`/`resume` to
        give up, then `swarm resume` and waits for the new lead to register."""
        with self.lock:
            self.expected_exit = True
            waiter = self.waiter
        t0 = time.monotonic()
        kill()
        try:
            code = waiter.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.early_end = "the waiting swarm did not notice its lead's end within 120 s"
            self.stop.set()
            return
        self.waiters.append((self.waiter_word, code))
        self.event(f"swarm {self.waiter_word} exited {code}; swarm resume")
        with self.lock:
            self.expected_exit = False
        self.launch([B.SWARM, "resume", TEAM, "--no-attach"], "resume")
        B.wait_for(lambda: (self.live_pid(LEAD) or old_lead) != old_lead or self.stop.is_set(),
                   120, "the resumed lead", step=0.05)
        self.lead_back.append(round(time.monotonic() - t0, 2))
        self.event(f"the lead is back (pid {self.live_pid(LEAD)}) after {self.lead_back[-1]} s")

    # ------------------------------------------------------------------ watching

    def sample(self):
        while not self.stop.is_set():
            self.take_sample()
            self.stop.wait(SAMPLE_EVERY)

    def take_sample(self):
        procs = {}
        for name in [LEAD] + self.members():
            pid = self.live_pid(name)
            if pid:
                figures = proc_figures(pid)
                if figures:
                    procs[pid] = {"name": name, **figures}
                    if name == LEAD:
                        procs[pid]["fd_kinds"] = fd_kinds(pid, self.env.dir)
        inboxes = {}
        directory = self.team_path("inboxes")
        for f in os.listdir(directory) if os.path.isdir(directory) else []:
            if f.endswith(".json"):
                path = os.path.join(directory, f)
                entries = self.read_json(path)
                try:
                    inboxes[f[:-5]] = (os.path.getsize(path), len(entries) if isinstance(entries, list) else 0)
                except OSError:
                    pass
        model = proc_figures(self.model_pid) if self.model_pid else None
        with self.lock:
            self.samples.append({"t": self.since(), "procs": procs, "inboxes": inboxes, "model": model})

    def wait_end(self):
        """Until the last waiter exits after the stream ended (or the run ended by itself)."""
        while True:
            with self.lock:
                waiter, expected = self.waiter, self.expected_exit
            code = waiter.poll()
            if code is not None and not expected and waiter is self.waiter:
                break
            if self.stop.is_set() and self.early_end:
                break
            if self.stream_done and time.monotonic() - self.stream_done > DRAIN_TIMEOUT:
                self.early_end = f"the team did not finish within {DRAIN_TIMEOUT} s of the stream's end"
                waiter.send_signal(signal.SIGINT)
                try:
                    waiter.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    waiter.kill()
                break
            time.sleep(0.2)
        code = self.waiter.poll()
        self.waiters.append((self.waiter_word, code))
        if self.stream_done is None and not self.early_end:
            tail = self.tail(f"{self.waiter_word}-{len(self.waiters) - 1}.out")
            self.early_end = f"swarm {self.waiter_word} exited {code} before the stream ended:\n{tail}"
        self.end = time.monotonic()
        self.stop.set()
        for t in self.threads:
            t.join(timeout=90)
        self.event(f"swarm {self.waiter_word} exited {code}")

    def tail(self, name, chars=2000):
        try:
            with open(os.path.join(self.env.dir, name)) as f:
                return f.read()[-chars:]
        except OSError:
            return ""

    def leftovers(self):
        """Processes of this job still running, and panes left on its tmux server, once things
        had 15 s to settle after the run."""
        deadline = time.monotonic() + 15
        while True:
            procs = stray_processes(self.env, {os.getpid(), self.model_pid})
            panes = subprocess.run(["tmux", "-L", self.env.socket, "list-panes", "-a", "-F",
                                    "#{pane_id} #{@swarm-agent} #{pane_dead}"],
                                   capture_output=True, text=True).stdout.split("\n")
            panes = [p for p in panes if p.strip()]
            if (not procs and not panes) or time.monotonic() > deadline:
                return procs, panes
            time.sleep(0.5)

    def keep(self):
        where = os.environ.get("SWARM_SOAK_KEEP")
        if where and self.chaos:
            target = os.path.join(where, f"soak-{int(time.time())}")
            shutil.copytree(self.env.dir, target, symlinks=True, ignore_dangling_symlinks=True,
                            ignore=shutil.ignore_patterns("*.sock"))
            log(f"kept the soak's directory in {target}")


def proc_figures(pid):
    """RSS (kB), open file descriptors and CPU seconds so far of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return {"rss_kb": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")),
                "cpu_s": B.cpu_ticks(pid) / os.sysconf("SC_CLK_TCK")}
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def fd_kinds(pid, home):
    """What a process's open descriptors are, counted by kind (a socket, a pipe, inotify...)
    or by path (under the job's directory, relative to it)."""
    kinds = collections.Counter()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return {}
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/"):
            kinds[os.path.relpath(target, home) if target.startswith(home) else target] += 1
        else:
            kinds[re.sub(r":\[\d+\]$", "", target)] += 1
    return dict(kinds)


def stray_processes(env, exclude):
    """Live processes whose command line or environment names the job's directory or tmux socket."""
    found = []
    marks = (env.dir.encode(), env.socket.encode())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        seen = b""
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{part}", "rb") as f:
                    seen += f.read()
            except OSError:
                pass
        if any(m in seen for m in marks) and B.pid_alive(int(entry)):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry} {argv[:120]}")
            except OSError:
                pass
    return found


# ---------------------------------------------------------------------------- counting

def read_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a torn last line
    except OSError:
        pass
    return out


def committed_counts(path, pattern):
    """How often each match of `pattern` was put in front of the model in a transcript, as
    `swarm resume` restores it (agent/transcript.rs): in user records answered by a response,
    and in a compaction's new context when it was not there before (a compaction keeps the
    mail that arrived with it verbatim, and that mail is in no user record)."""
    counts = collections.Counter()
    pending = []

    def texts(blocks):
        return [b.get("text", "") for b in blocks if b.get("type") == "text"]

    for r in read_lines(path):
        kind = r.get("kind")
        if kind == "user":
            pending.append(r.get("blocks") or [])
        elif kind == "response":
            for blocks in pending:
                for text in texts(blocks):
                    counts.update(m.group(0) for m in pattern.finditer(text))
            pending = []
        elif kind == "compaction":
            pending = []
            carried = {m.group(0) for msg in r.get("messages") or [] if msg.get("role") == "user"
                       for text in texts(msg.get("content") if isinstance(msg.get("content"), list) else [])
                       for m in pattern.finditer(text)}
            counts.update(k for k in carried if counts[k] == 0)
    return counts


def mailbox(job, name):
    """(every envelope that reached `name`'s inbox: delivered log, then live inbox; the live
    inbox alone)."""
    delivered = read_lines(job.team_path("inboxes", f"{name}.delivered.jsonl"))
    live = job.read_json(job.team_path("inboxes", f"{name}.json")) or []
    return delivered + live, live


def count_tasks(job, requests):
    """Completions the model saw succeed per task, claims per task, work lines per task."""
    done, claims = collections.Counter(), collections.Counter()
    previous = {}
    for r in requests:
        agent, text = r.get("agent"), r.get("userText", "")
        if previous.get(agent) == text:
            continue  # the same request again: a retry after a 429/529
        previous[agent] = text
        if r.get("rule") == "summary":
            continue
        done.update(UPDATED.findall(text))
        claims.update(CLAIMED.findall(text))
    work = collections.Counter()
    try:
        with open(job.work_log) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "work":
                    work[parts[1]] += 1
    except OSError:
        pass
    return done, claims, work


def completion_times(job):
    """Seconds from the start to each task's first completion the model saw, in order."""
    first, previous = {}, {}
    for r in job.requests:
        agent, text = r.get("agent"), r.get("userText", "")
        if previous.get(agent) == text:
            continue
        previous[agent] = text
        for t in UPDATED.findall(text):
            first.setdefault(t, r["receivedMs"])
    return sorted((ms - job.start_ms) / 1000 for ms in first.values())


def count_messages(job):
    """Per kind of message: sent, lost, duplicated, unread at the end, failed sends."""
    out = {}
    everyone = job.everyone()
    transcripts = {n: job.team_path("transcripts", f"{n}.jsonl") for n in everyone}
    lead_all, lead_live = mailbox(job, LEAD)
    lead_seen = committed_counts(transcripts[LEAD], re.compile(f"{NOTE.pattern}|{REPORT.pattern}"))
    unread_lead = collections.Counter(e.get("text", "") for e in lead_live)

    unread_notes = out["unread_details"] = []

    def tally(kind, items):
        t = {"sent": 0, "lost": 0, "duplicated": 0, "unread": 0, "failed_send": 0}
        for key, to, seen, unread, code in items:
            if code != 0:
                t["failed_send"] += 1
                continue
            t["sent"] += 1
            if seen > 1:
                t["duplicated"] += seen - 1
            elif seen == 0:
                t["unread" if unread else "lost"] += 1
                if unread:
                    s = job.state(to) or {}
                    why = (s.get("exit") or {}).get("reason", "")
                    unread_notes.append(f"{kind[:-1]} {key} to {to}, {s.get('activity', '?')}"
                                        + (f" ({why})" if why else ""))
        out[kind] = t

    tally("notes", [(n, LEAD, lead_seen[f"soak-note {n}"],
                     any(f"soak-note {n}:" in t for t in unread_lead), code)
                    for n, (_, code) in job.notes.items()])
    ping_seen = {n: committed_counts(transcripts[n], PING) for n in everyone[1:]}
    ping_items = []
    for n, (to, code) in job.pings.items():
        _, live = mailbox(job, to)
        unread = any(f"soak-ping {n}:" in e.get("text", "") for e in live)
        ping_items.append((n, to, ping_seen.get(to, {}).get(f"soak-ping {n}", 0), unread, code))
    tally("pings", ping_items)
    # Teammates' reports: what reached the lead's mailbox, against its conversation.
    sent = collections.Counter(e.get("text", "") for e in lead_all if REPORT.fullmatch(e.get("text", "")))
    reports = {"sent": sum(sent.values()), "lost": 0, "duplicated": 0, "unread": 0, "failed_send": 0}
    for text, n in sent.items():
        seen = lead_seen[text]
        if seen > n:
            reports["duplicated"] += seen - n
        elif seen < n:
            missing = n - seen
            unread = min(missing, unread_lead[text])
            reports["unread"] += unread
            reports["lost"] += missing - unread
    out["reports"] = reports
    ids = collections.Counter(e.get("msg_id") for n in everyone for e in mailbox(job, n)[0] if e.get("msg_id"))
    out["mailbox_duplicate_ids"] = sum(c - 1 for c in ids.values() if c > 1)
    return out


def count_approvals(job):
    twice_racers = sum(1 for codes in job.approvals.values() if codes.count(0) > 1)
    answers = collections.Counter()
    for n in job.everyone()[1:]:
        for e in mailbox(job, n)[0]:
            text = e.get("text", "")
            if '"permission_response"' in text or '"type":"permission_response"' in text:
                try:
                    answers[json.loads(text).get("request_id")] += 1
                except ValueError:
                    pass
    states = collections.Counter()
    directory = job.team_path("approvals")
    for f in os.listdir(directory) if os.path.isdir(directory) else []:
        if f.endswith(".json"):
            states[(job.read_json(os.path.join(directory, f)) or {}).get("state", "?")] += 1
    return {"requests": len(job.approvals), "racer_wins_both": twice_racers,
            "answered_twice": sum(1 for c in answers.values() if c > 1),
            "neither_racer_won": sum(1 for codes in job.approvals.values() if 0 not in codes),
            "states": dict(states)}


def process_growth(job):
    """The lead's first and last processes and the longest-lived teammates: first figures
    taken WARM_S after their first sample, last ones before the stream ended (after it, the
    lead shuts the team down and writes its report: `after`, its largest RSS then)."""
    cutoff = (job.stream_done or job.end) - job.start
    by_pid = collections.defaultdict(list)
    for s in job.samples:
        for pid, p in s["procs"].items():
            by_pid[pid].append((s["t"], p))
    spans = []
    for pid, seen in by_pid.items():
        first_t = seen[0][0]
        warm = [x for x in seen if x[0] >= first_t + WARM_S] or seen
        during = [x for x in seen if x[0] <= cutoff] or seen
        after = [p["rss_kb"] for t, p in seen if t > cutoff]
        spans.append({"pid": pid, "name": seen[0][1]["name"], "from": warm[0][0], "to": during[-1][0],
                      "start": warm[0][1], "end": during[-1][1], "after": max(after, default=None)})
    leads = sorted((s for s in spans if s["name"] == LEAD), key=lambda s: s["from"])
    mates = sorted((s for s in spans if s["name"] != LEAD), key=lambda s: s["to"] - s["from"], reverse=True)
    return leads, mates


def growth(a, b):
    return round((b - a) / a * 100, 1) if a else 0.0


# ---------------------------------------------------------------------------- the suite

def run_job(minutes, chaos, burst_chance):
    job = Job(minutes, chaos)
    try:
        log(f"{'soak' if chaos else 'no-fault run'}: {minutes:g} min, seed {SEED}, root {job.env.dir}")
        job.begin(burst_chance)
        job.wait_end()
        job.take_sample()
        job.procs_left, job.panes_left = job.leftovers()
        analyse(job)
        job.keep()
        return job
    finally:
        job.stop.set()
        job.env.close()


def analyse(job):
    """Everything the report needs from the job's files, before its directory goes."""
    job.requests = read_lines(job.model_log)
    job.done_ids = [t for t in job.created if (job.task(t) or {}).get("status") == "completed"]
    job.counts = count_tasks(job, job.requests)
    job.messages = count_messages(job)
    job.approval_counts = count_approvals(job)
    job.roster = job.everyone()[1:]
    job.growth = process_growth(job)
    largest = {"transcript": 0, "delivered": 0}
    for directory, kind, suffix in (("transcripts", "transcript", ".jsonl"), ("inboxes", "delivered", ".delivered.jsonl")):
        path = job.team_path(directory)
        for name in os.listdir(path) if os.path.isdir(path) else []:
            if name.endswith(suffix):
                largest[kind] = max(largest[kind], os.path.getsize(os.path.join(path, name)))
    job.largest = largest
    hits, bursts, last = 0, 0, {}
    for r in job.requests:
        rule = r.get("rule", "")
        if rule.startswith("burst "):
            hits += 1
            if r["receivedMs"] - last.get(rule, -10**12) > BURST_MS:
                bursts += 1
            last[rule] = r["receivedMs"]
    job.bursts = (bursts, hits)
    half_ms = job.start_ms + (job.end - job.start) * 500
    sizes = collections.defaultdict(lambda: [0, 0])
    for r in job.requests:
        who = "lead" if r.get("agent") == LEAD else "teammates"
        half = 0 if r["receivedMs"] < half_ms else 1
        sizes[who][half] = max(sizes[who][half], r.get("bytes", 0))
    job.done_s = completion_times(job)
    job.request_bytes = "; ".join(f"{who} {a / 1024:.0f} KB -> {b / 1024:.0f} KB" for who, (a, b) in sorted(sizes.items()))


def soak_suite():
    figures = {}
    minutes = float(B.OPTIONS.get("minutes") or os.environ.get("SWARM_SOAK_MINUTES", "5"))
    base_minutes = min(minutes, NOFAULT_MINUTES)
    base = run_job(base_minutes, chaos=False, burst_chance=0)
    base_wall = base.end - base.start
    base_rate = len(base.done_ids) / base_wall * 60
    request_rate = len(base.requests) / base_wall
    figures["soak.nofault.tasks"] = len(base.done_ids)
    figures["soak.nofault.wall_s"] = round(base_wall, 1)
    figures["soak.nofault.tasks_per_min"] = round(base_rate, 1)
    figures["soak.nofault.time_to_all_s"] = round(base.done_s[-1], 1) if base.done_s else "-"
    if base.early_end:
        log(f"the run without faults ended early: {base.early_end}")
        figures["soak.nofault.early_end"] = base.early_end.splitlines()[0]
    chance = 1 / max(1.0, request_rate * BURST_EVERY_S)
    job = run_job(minutes, chaos=True, burst_chance=chance)
    report(job, figures, base)
    return figures


def report(job, figures, base):
    f = figures
    wall = job.end - job.start
    done_ids = set(job.done_ids)
    made = list(job.created)
    seen_done, claims, work = job.counts
    once = sum(1 for t in made if t in done_ids and seen_done[t] <= 1)
    twice = sum(1 for t in made if seen_done[t] >= 2)
    never = sum(1 for t in made if t not in done_ids)
    f["soak.minutes"] = job.minutes
    f["soak.tasks_made"] = len(made)
    target("soak.tasks_made", f">= {MIN_TASKS}")
    f["soak.tasks_completed_once"] = once
    f["soak.tasks_completed_twice"] = twice
    target("soak.tasks_completed_twice", "0")
    f["soak.tasks_never_completed"] = never
    target("soak.tasks_never_completed", "0")
    f["soak.tasks_worked_more_than_once"] = sum(1 for t in made if work[t] > 1)
    f["soak.tasks_claimed_more_than_once"] = sum(1 for t in made if claims[t] > 1)
    m = job.messages
    for kind in ("notes", "pings", "reports"):
        for k, v in m[kind].items():
            f[f"soak.{kind}.{k}"] = v
        target(f"soak.{kind}.lost", "0")
        target(f"soak.{kind}.duplicated", "0")
    f["soak.mailbox_duplicate_ids"] = m["mailbox_duplicate_ids"]
    target("soak.mailbox_duplicate_ids", "0")
    a = job.approval_counts
    f["soak.approvals.requests"] = a["requests"]
    f["soak.approvals.resolved_twice"] = a["racer_wins_both"] + a["answered_twice"]
    target("soak.approvals.resolved_twice", "0")
    f["soak.approvals.neither_racer_won"] = a["neither_racer_won"]
    f["soak.approvals.states"] = " ".join(f"{k}:{v}" for k, v in sorted(a["states"].items()))
    f["soak.orphan_processes"] = len(job.procs_left)
    target("soak.orphan_processes", "0")
    f["soak.orphan_panes"] = len(job.panes_left)
    target("soak.orphan_panes", "0")
    f["soak.teammate_kills"] = len(job.kills)
    f["soak.teammates_spawned"] = len(job.roster)
    f["soak.lead_back_s"] = " ".join(str(x) for x in job.lead_back) or "-"
    f["soak.waiter_exits"] = " ".join(f"{w}:{c}" for w, c in job.waiters)
    bursts = job.bursts
    f["soak.rate_limit_bursts"] = bursts[0]
    f["soak.rate_limited_requests"] = bursts[1]
    f["soak.compactions"] = sum(1 for r in job.requests if r.get("rule") == "summary")
    leads, mates = job.growth
    for label, s in (("first", leads[0] if leads else None), ("last", leads[-1] if len(leads) > 1 else None)):
        if not s:
            continue
        key = f"soak.lead_{label}"
        f[f"{key}.span_s"] = f"{s['from']:.0f}-{s['to']:.0f}"
        f[f"{key}.rss_mb"] = f"{s['start']['rss_kb'] / 1024:.1f} -> {s['end']['rss_kb'] / 1024:.1f}"
        f[f"{key}.rss_growth_pct"] = growth(s["start"]["rss_kb"], s["end"]["rss_kb"])
        f[f"{key}.fds"] = f"{s['start']['fds']} -> {s['end']['fds']}"
        f[f"{key}.fds_growth_pct"] = growth(s["start"]["fds"], s["end"]["fds"])
        f[f"{key}.cpu_pct"] = round((s["end"]["cpu_s"] - s["start"]["cpu_s"]) / max(1, s["to"] - s["from"]) * 100, 1)
        if s["after"]:
            f[f"{key}.rss_mb_after_the_stream"] = round(s["after"] / 1024, 1)
        target(f"{key}.rss_growth_pct", "<= 20")
        target(f"{key}.fds_growth_pct", "<= 20")
    long_lived = [s for s in mates if s["to"] - s["from"] >= 60][:8]
    if long_lived:
        f["soak.teammates_long_lived"] = len(long_lived)
        f["soak.teammate_rss_mb_median"] = (
            f"{statistics.median(s['start']['rss_kb'] for s in long_lived) / 1024:.1f} -> "
            f"{statistics.median(s['end']['rss_kb'] for s in long_lived) / 1024:.1f}")
        f["soak.teammate_rss_growth_pct_max"] = max(growth(s["start"]["rss_kb"], s["end"]["rss_kb"]) for s in long_lived)
        f["soak.teammate_fds_max"] = f"{max(s['start']['fds'] for s in long_lived)} -> {max(s['end']['fds'] for s in long_lived)}"
    models = [s["model"] for s in job.samples if s.get("model")]
    if models:
        f["soak.model_server_rss_mb"] = f"{models[0]['rss_kb'] / 1024:.1f} -> {models[-1]['rss_kb'] / 1024:.1f}"
    fifths = []
    for k in range(5):
        part = [s for s in job.samples if k * wall / 5 <= s["t"] < (k + 1) * wall / 5]
        fifths.append(max(((n, b, name) for s in part for name, (b, n) in s["inboxes"].items()), default=None))
    largest = max((x for x in fifths if x), default=None)
    if largest:
        f["soak.largest_inbox"] = f"{largest[0]} msgs, {largest[1]} B ({largest[2]})"
        f["soak.largest_inbox_msgs_by_fifth"] = " ".join(str(x[0]) if x else "-" for x in fifths)
        target("soak.largest_inbox_msgs_by_fifth", "bounded: no growth from fifth to fifth")
    f["soak.largest_transcript_kb"] = round(job.largest["transcript"] / 1024, 1)
    f["soak.largest_delivered_log_kb"] = round(job.largest["delivered"] / 1024, 1)
    f["soak.request_bytes"] = job.request_bytes
    f["soak.wall_s"] = round(wall, 1)
    f["soak.tasks_per_min"] = round(len(done_ids) / wall * 60, 1)
    # Tasks get slower as the list grows (every claim and every tick of the lead reads every
    # task file), so the fair comparison is the time to as many tasks as the run without
    # faults completed.
    same = len(base.done_s)
    if same and len(job.done_s) >= same:
        f["soak.time_to_nofault_tasks_s"] = round(job.done_s[same - 1], 1)
        f["soak.slowdown_from_faults"] = round(job.done_s[same - 1] / base.done_s[-1], 2)
        target("soak.time_to_nofault_tasks_s", f"report, beside soak.nofault.time_to_all_s ({same} tasks)")
    if job.early_end:
        f["soak.early_end"] = job.early_end.splitlines()[0]
        print(f"\nsoak: the run ended early: {job.early_end}")
    print()
    print(f"soak: {job.minutes:g} min, seed {SEED}; events:")
    for t, what in job.events:
        print(f"  {t:7.1f} s  {what}")
    for s in leads:
        series = [(round(t), p) for t, p in ((x["t"], x["procs"].get(s["pid"])) for x in job.samples) if p]
        cpu = [0.0] + [(b["cpu_s"] - a["cpu_s"]) / max(1, tb - ta) * 100
                       for (ta, a), (tb, b) in zip(series, series[1:])]
        print(f"soak: lead pid {s['pid']}: (s, RSS MB, fds, CPU % since the sample before) " +
              " ".join(f"{t}:{p['rss_kb'] / 1024:.1f}:{p['fds']}:{c:.0f}" for (t, p), c in zip(series, cpu)))
        if series:
            first, last = series[0][1].get("fd_kinds", {}), series[-1][1].get("fd_kinds", {})
            changed = {k: (first.get(k, 0), last.get(k, 0)) for k in set(first) | set(last)
                       if first.get(k, 0) != last.get(k, 0)}
            print(f"  its descriptors: {sum(first.values())} -> {sum(last.values())}; changed: "
                  + (", ".join(f"{k} {a}->{b}" for k, (a, b) in sorted(changed.items())) or "none"))
    for line in job.messages["unread_details"]:
        print(f"soak: unread at the end: {line}")
    if job.procs_left or job.panes_left:
        print("soak: left over after the run:")
        for p in job.procs_left + job.panes_left:
            print(f"  {p}")
    print()


def target(key, text):
    B.target(key, text)
