"""The `tokens` suite of scripts/bench: what a team's model requests cost, measured on the
requests themselves. Like every suite it asserts nothing, but it exits non-zero when the
job it measures fails (the figures of a failed job mean nothing).

  job         a real `swarm run` against `swarm model-server --log-requests`: a lead and
              4 teammates (bob in plan mode, approved by the lead; alice, carol, dave),
              16 tasks in four tiers with dependencies, two broadcasts, a check at the end.
              Per agent and in total: requests, input, cacheable-prefix and output tokens,
              the cacheable-prefix share; for the lead: input per completed task, the share
              of its input that is idle notifications and protocol wrappers, the input of
              its turns woken by nothing else, and an estimate of what Claude Code's lead
              would use for the same job (assumptions printed with it)
  beside Claude Code (with --claude-bin PATH) the same job, the same lead and script, with
              Claude Code teammates (`swarm run --engine claude --claude-bin PATH`), offline
              against the same scripted server: per agent and for the team of each run,
              requests, input tokens, completed tasks, input per completed task and the
              cacheable-prefix share, and the ratio swarm / Claude Code of the team's input
              per completed task (target <= 0.2). The Claude Code teammates use the client's
              own tools and envelopes (TaskList, TaskUpdate to claim, TaskGet, Write, Bash,
              SendMessage; bob's plan goes to the plan file the client names and ExitPlanMode);
              the client runs on its default model with CLAUDE_CODE_ENABLE_TODO_TOOLS=1 (without
              it that model has no task tools) and the job's allow rules in the project's
              .claude/settings.json. Their requests carry no agent header: each is put to its
              teammate by the session id in its metadata. The client's title requests count.
              If that run does not finish, its figures are over the tasks it completed, and
              it says so; it exits non-zero only when it completes none.
              Then a third run: the same job under a real Claude Code lead whose teammates
              are swarm's (CLAUDE_CODE_TEAMMATE_COMMAND; scripts/bench_tokens_lead.py), per
              agent and for the team, and its team's input per completed task over the
              second run's.
  compaction  one teammate, 200 messages (`swarm send`, one at a time), a script that
              acknowledges each: the request size over time (first, max, last) beside the
              context window given with --context-window, when the binary has that flag

Tokens are bytes/4 of the canonical serialisation of a request: its system, then its
tools, then its messages, as compact JSON with every `cache_control` marker taken out (a
marker moves with the last message, but it is not part of the content a prompt cache
keys on). A request's cacheable prefix is the longest common prefix of its serialisation
and that of the previous request of the same agent. Output tokens are what the scripted
server reports (reply bytes/4), summed from the agents' state files. SWARM_TOKENS_KEEP=DIR
keeps both runs' request logs there (job.jsonl, compaction.jsonl), for a closer look.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import bench_tokens_lead

B = None  # the bench module: Env, target, SWARM, wait_for

TEAM = "tok"
LEAD = "team-lead"
MATES = ["bob", "alice", "carol", "dave"]
JOB_TIMEOUT = 150
MESSAGES = 200
WINDOW = 6000  # tokens: small enough that 200 messages would overflow it several times


def register(bench):
    global B
    B = bench
    bench.suite("tokens")(tokens_suite)


def log(text):
    print(f"bench tokens: {text}", file=sys.stderr)


# ---------------------------------------------------------------------------- the job

def part(n):
    return f"parts/p{n:02d}.sh"


def part_body(n, needs):
    uses = "".join(f"source \"$(dirname \"${{BASH_SOURCE[0]}}\")/p{d:02d}.sh\"\n" for d in needs)
    calls = " ".join(f"$(p{d:02d})" for d in needs)
    return (f"#!/usr/bin/env bash\n# part {n:02d} of the pipeline: prints its number after the parts it needs.\n"
            f"{uses}p{n:02d}() {{ printf '%s' \"{calls}{' ' if needs else ''}{n:02d}\"; }}")


# Four tiers: 1-4 stand alone; 5-8 each need one of 1-4; 9-12 one of 5-8; 13 needs 9 and
# 10, 14 needs 11 and 12, 15 needs 5-8, and 16 (the entry point and the job's check) needs
# 13-15.
NEEDS = {n: [] for n in range(1, 5)}
NEEDS.update({n: [n - 4] for n in range(5, 13)})
NEEDS.update({13: [9, 10], 14: [11, 12], 15: [5, 6, 7, 8], 16: [13, 14, 15]})

CHECK = """#!/usr/bin/env bash
# The job's check: every part parses, and the entry point prints the whole pipeline.
cd "$(dirname "$0")" || exit 1
for f in parts/p*.sh; do bash -n "$f" || exit 1; done
[ "$(ls parts/p*.sh | wc -l)" -eq 16 ] || { echo "missing parts"; exit 1; }
source parts/p16.sh
out=$(p16)
case "$out" in *01*16) echo "ok: $out" ;; *) echo "FAIL: $out"; exit 1 ;; esac
"""


def task(n):
    path = part(n)
    done = f"task #{n} checked: {path} is good"
    check = "bash check.sh" if n == 16 else f"bash -n {path}"
    needs = ", ".join(f"#{d}" for d in NEEDS[n]) or "nothing"
    t = {
        "subject": f"Write {path}",
        "activeForm": f"Writing {path}",
        "description": f"Create {path}, part {n} of the pipeline (it needs {needs}).\n\n"
                       f"File: {path}\n```\n{part_body(n, NEEDS[n])}\n```\n"
                       f"Check: `{check} && echo \"{done}\"`",
    }
    if NEEDS[n]:
        t["blockedBy"] = [str(d) for d in NEEDS[n]]
    return t


GOAL = ("Build the 16-part shell pipeline in parts/ (parts/p01.sh to parts/p16.sh, each "
        "printing its number after the parts it needs); parts/p16.sh is the entry point and "
        "check.sh must pass.")
CLAIMED = r"(?s)claimed task #(?P<id>\d+).*?File: (?P<path>\S+)\n```\n(?P<content>.*?)\n```"


def call(tool, **input):
    return {"name": tool, "input": input}


def job_script():
    """The model's side of the job; rules are tried in order (crates/model-server/src/script.rs)."""
    rules = []

    def rule(name, **kw):
        rules.append({"name": name, **kw})

    creates = lambda ids: [call("TaskCreate", **task(n)) for n in ids]
    rule("lead creates tier 1", agent=LEAD, user_contains="Goal:", no_tool_result=True,
         reply={"text": "Sixteen parts in four tiers; I create them tier by tier with their dependencies.",
                "tool_calls": creates(range(1, 5))})
    rule("lead creates tier 2", agent=LEAD, tool_result_contains="Task #4 created",
         reply={"tool_calls": creates(range(5, 9))})
    rule("lead creates tier 3", agent=LEAD, tool_result_contains="Task #8 created",
         reply={"tool_calls": creates(range(9, 13))})
    rule("lead creates tier 4 and bob", agent=LEAD, tool_result_contains="Task #12 created",
         reply={"text": "All 16 tasks exist. bob starts in plan mode: I review his plan before the others join.",
                "tool_calls": creates(range(13, 17)) + [
                    call("Agent", name="bob", mode="plan", description="careful builder",
                         prompt="You are bob. Present a plan with ExitPlanMode and wait for approval before writing anything.")]})
    rule("lead waits for bob's plan", agent=LEAD, tool_result_contains="name: bob",
         reply={"text": "Waiting for bob's plan."})
    rule("lead approves the plan and brings in the others", agent=LEAD,
         user_regex=r"teammate_id=\"(?P<who>[^\"]+)\"[^>]*>\n[^\n]* asks you to approve a plan \(request id (?P<rid>[^)]+)\)",
         reply={"text": "The plan writes the file the task gives and checks it: approved. alice, carol and dave join.",
                "tool_calls": [
                    call("SendMessage", to="{{who}}",
                         message={"type": "plan_approval_response", "request_id": "{{rid}}", "approve": True}),
                    *[call("Agent", name=n, description="pipeline builder",
                           prompt=f"You are {n}. Claim ready tasks, build them, check them, report to team-lead.")
                      for n in MATES[1:]]]})
    rule("lead briefs everyone", agent=LEAD, tool_result_contains="Approved bob's request",
         reply={"tool_calls": [call("SendMessage", to="*", summary="how we work",
                                    message="Tasks come in four tiers; claim whatever is ready. Mark a task completed once its check passes, then tell me in one line.")]})
    rule("lead opens the last tier", agent=LEAD, user_contains="Task #12 is done", times=1,
         reply={"text": "Tier 3 is done.",
                "tool_calls": [call("SendMessage", to="*", summary="last tier open",
                                    message="Tiers 1-3 are done: #13-#16 are next, #16 runs check.sh.")]})
    rule("lead waits", agent=LEAD, tool_result_contains="Message broadcast",
         reply={"text": "The team is at work; I'll wait for news."})
    rule("lead grants a permission", agent=LEAD,
         user_regex=r"teammate_id=\"(?P<who>[^\"]+)\"[^>]*>\n[^\n]* asks permission to run (?P<what>.*?) \(request id (?P<rid>[^)]+)\)",
         reply={"tool_calls": [call("SendMessage", to="{{who}}",
                                    message={"type": "permission_response", "request_id": "{{rid}}", "approve": True})]})
    rule("lead verifies", agent=LEAD, user_contains="All tasks are completed",
         reply={"text": "Let me look at what was built.", "tool_calls": [call("Glob", pattern="parts/*.sh")]})
    rule("lead sums up", agent=LEAD, tool_result_contains="p16.sh",
         reply={"text": "Done: the 16 parts are written and check.sh passes."})
    rule("lead notes mail", agent=LEAD, reply={"text": "Noted."})

    claude_code_rules(rule)

    rule("bob plans", agent="bob", user_regex=CLAIMED, no_tool_result=True, times=1,
         reply={"tool_calls": [call("ExitPlanMode",
                                    plan="Plan for task #{{id}}:\n1. Write {{path}} as the task gives it.\n2. Run its check.\n3. Mark it completed and tell team-lead.\n\nFile: {{path}}\n```\n{{content}}\n```")]})
    rule("bob carries out the plan", agent="bob", tool_result_contains="your plan", delay_ms=1000,
         user_regex=r"(?s)(approved your plan|go ahead with your plan).*?Plan for task #(?P<id>\d+):.*?File: (?P<path>\S+)\n```\n(?P<content>.*?)\n```",
         reply={"tool_calls": [call("Write", file_path="{{path}}", content="{{content}}\n"), call("TaskGet", taskId="{{id}}")]})
    rule("write", user_regex=CLAIMED, no_tool_result=True,
         reply={"text": "On it: {{path}}.", "tool_calls": [call("Write", file_path="{{path}}", content="{{content}}\n"), call("TaskGet", taskId="{{id}}")]})
    rule("report", user_regex=r"task #(?P<id>\d+) checked: (?P<path>\S+) is good",
         reply={"tool_calls": [call("TaskUpdate", taskId="{{id}}", status="completed"),
                               call("SendMessage", to=LEAD, summary="task #{{id}} done", message="Task #{{id}} is done: {{path}} is written and its check passes.")]})
    rule("check", user_regex=r"(?s)#(?P<id>\d+) \[in_progress\].*?Check: `(?P<check>[^`]+)`",
         reply={"tool_calls": [call("Bash", command="{{check}}", description="run the task's check")]})
    rule("done", tool_result_contains="Message sent to team-lead", reply={"text": "Done."})
    rule("mail", user_contains="New message(s) from your team", no_tool_result=True, reply={"text": "Understood."})
    rule("stuck", user_contains="is still not completed", reply={"text": "Its check did not pass; I cannot complete it."})
    return {"rules": rules, "default": {"text": "OK."}}


# Claude Code teammates (--claude-bin) do the same job through the client's own tools and
# envelopes (docs/design/claude-code-client.md). Their requests carry no x-swarm-agent
# header, so their rules know them by the client's system prompt, which names no agent.
CC_SYSTEM = "IMPORTANT: You are running as an agent in a team."
CC_TITLE = "You are naming a coding session"
CC_READY = r"(?m)^#(?P<id>\d+) \[pending\] Write \S+$"  # TaskList: pending, no owner, not blocked
CC_LISTED = r"(?m)^#\d+ \[(?:pending|in_progress|completed)\] Write "
CC_PLAN = ("Plan:\n1. Claim the lowest ready task on the list (TaskUpdate, in_progress).\n"
           "2. Write the file its description gives, as given.\n3. Run its check.\n"
           "4. Mark it completed and tell team-lead; then the next ready task.")


def claude_code_rules(rule):
    """A Claude Code teammate's side of the job: it finds work itself (TaskList, then
    TaskUpdate to in_progress, which makes it the owner; the lowest ready id first, as the
    client's TaskList prompt says), reads the task (TaskGet), writes and checks it in one
    turn, completes it and reports, and lists again as the client's TaskUpdate result tells
    it to. bob, in plan mode, writes his plan to the plan file the client names, submits it
    with ExitPlanMode and waits for the lead's answer. The task and message tools are called
    directly, without loading their schemas through ToolSearch first (the client accepts
    that; a real model would load them, so these figures are a lower bound)."""
    cc = {"system_contains": CC_SYSTEM}
    rule("cc: a session title", system_contains=CC_TITLE, reply={"text": '{"title": "Shell pipeline parts"}'})
    rule("cc: approves shutdown", **cc, no_tool_result=True,
         user_regex=r'"shutdown_response","request_id":"(?P<rid>shutdown-[^"]+)"',
         reply={"text": "Approving.", "tool_calls": [call("SendMessage", to=LEAD, message={
             "type": "shutdown_response", "request_id": "{{rid}}", "approve": True})]})
    rule("cc: bob presents his plan", **cc, no_tool_result=True, times=1, user_contains="Present a plan with ExitPlanMode",
         reply={"tool_calls": [call("ExitPlanMode", plan=CC_PLAN)]})
    rule("cc: bob writes his plan where the client says", **cc, times=1,
         user_regex=r"No plan file found at (?P<file>\S+?)\. Please write your plan",
         reply={"tool_calls": [call("Write", file_path="{{file}}", content=CC_PLAN)]})
    rule("cc: bob submits his plan", **cc, times=1, user_regex=r"File created successfully at: \S*/plans/",
         reply={"tool_calls": [call("ExitPlanMode")]})
    rule("cc: bob waits", **cc, tool_result_contains="Your plan has been submitted to the team lead",
         reply={"text": "Waiting for team-lead's approval."})
    rule("cc: bob's plan is approved", **cc, no_tool_result=True, user_contains="[Plan Approved]",
         reply={"tool_calls": [call("TaskList")]})
    rule("cc: starts", **cc, no_tool_result=True, user_contains="Claim ready tasks",
         reply={"tool_calls": [call("TaskList")]})
    rule("cc: claims", **cc, no_tool_result=False, user_regex=CC_READY,
         reply={"tool_calls": [call("TaskUpdate", taskId="{{id}}", status="in_progress")]})
    rule("cc: nothing ready", **cc, no_tool_result=False, user_regex=CC_LISTED,
         reply={"text": "Nothing is ready for me now; I'll wait."})
    rule("cc: reads its task", **cc, user_regex=r"Updated task #(?P<id>\d+) (?:owner, status|status, owner)",
         reply={"tool_calls": [call("TaskGet", taskId="{{id}}")]})
    rule("cc: writes and checks", **cc, no_tool_result=False,
         user_regex=r"(?s)File: (?P<path>\S+)\n```\n(?P<content>.*?)\n```.*?Check: `(?P<check>[^`]+)`",
         reply={"tool_calls": [call("Write", file_path="{{path}}", content="{{content}}\n"),
                               call("Bash", command="{{check}}", description="run the task's check")]})
    rule("cc: lists again", **cc, tool_result_contains="Call TaskList now",
         reply={"tool_calls": [call("TaskList")]})
    rule("cc: lost a claim", **cc, tool_result_contains="Updated task #",
         reply={"tool_calls": [call("TaskList")]})
    rule("cc: its own claims come back", **cc, no_tool_result=True, user_contains='"type":"task_assignment"',
         reply={"text": "Those are the tasks I took; nothing new."})
    rule("cc: mail", **cc, no_tool_result=True, reply={"text": "Understood."})


def start_server(env, script, log_path):
    path = os.path.join(env.dir, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    p = env.popen([B.SWARM, "model-server", "--script", path, "--log-requests", log_path],
                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip()
    if not url.startswith("http"):
        raise SystemExit(f"bench tokens: the model server did not start (got {url!r}); "
                         "does this swarm have `model-server --log-requests`?")
    return url


def keep(log_path, name):
    """With SWARM_TOKENS_KEEP=DIR, the request log is copied to DIR/<name>.jsonl."""
    where = os.environ.get("SWARM_TOKENS_KEEP")
    if where:
        os.makedirs(where, exist_ok=True)
        shutil.copy(log_path, os.path.join(where, f"{name}.jsonl"))


def read_requests(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------------------- measuring

def strip_cache_control(v):
    if isinstance(v, dict):
        return {k: strip_cache_control(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [strip_cache_control(x) for x in v]
    return v


def compact(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def canonical(body):
    """A request as the bytes that are counted: its system, then its tools, then its messages."""
    body = strip_cache_control(body or {})
    return "".join(compact(body.get(k)) for k in ("system", "tools", "messages")).encode()


def common_prefix(a, b):
    """Length of the longest common prefix of two byte strings (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def tokens(n_bytes):
    return n_bytes / 4


def json_len(text):
    """Bytes a string takes inside the canonical JSON (escapes included)."""
    return len(compact(text).encode()) - 2


IDLE_BLOCK = re.compile(r"<teammate-message[^>]*>\n[^\n<]* is idle\b.*?\n</teammate-message>", re.S)
IDLE_LIST = re.compile(r"\(idle and waiting for work: [^)]*\)")
PLAN_BLOCK = re.compile(r"<teammate-message[^>]*>\n[^\n]* asks you to approve a plan .*?\n</teammate-message>", re.S)
PLAN_BODY = re.compile(r"\n\nPlan:\n(.*?)\n\nAnswer with SendMessage", re.S)
OTHER_PROTOCOL = re.compile(
    r"<teammate-message[^>]*>\n(?:[^\n]* asks permission to run |[^\n]* asks you to approve|"
    r"shutdown requested by |[^\n]* approved shutdown \[|[^\n]* rejected shutdown: |plan (?:approved|rejected) \[|"
    r"permission \w+ \[|task #\d+ assigned by |[^\n]* asked for (?:approval|permission)|[^\n]*(?:has )?terminated)"
    r".*?\n</teammate-message>", re.S)
MAIL_HEAD = "New message(s) from your team:\n\n"
ENVELOPE = re.compile(r"<teammate-message[^>]*>\n|\n</teammate-message>")


def texts_of(message):
    """(kind, text) of each block of a message that carries text."""
    content = message.get("content")
    if isinstance(content, str):
        yield "text", content
        return
    for b in content or []:
        t = b.get("type")
        if t == "text":
            yield "text", b.get("text", "")
        elif t == "tool_result":
            c = b.get("content")
            if isinstance(c, str):
                yield "tool_result", c
            else:
                for x in c or []:
                    if x.get("type") == "text":
                        yield "tool_result", x.get("text", "")


def chatter(text):
    """Bytes of `text` (as canonical JSON) that are idle notifications, protocol wrappers,
    and the envelope of ordinary mail (header and tags)."""
    idle = sum(json_len(m.group(0)) for m in IDLE_BLOCK.finditer(text))
    idle += sum(json_len(m.group(0)) for m in IDLE_LIST.finditer(text))
    protocol = 0
    for m in PLAN_BLOCK.finditer(text):
        body = PLAN_BODY.search(m.group(0))
        protocol += json_len(m.group(0)) - (json_len(body.group(1)) if body else 0)
    for m in OTHER_PROTOCOL.finditer(text):
        if not PLAN_BLOCK.fullmatch(m.group(0)):
            protocol += json_len(m.group(0))
    rest = IDLE_LIST.sub("", PLAN_BLOCK.sub("", OTHER_PROTOCOL.sub("", IDLE_BLOCK.sub("", text))))
    envelope = rest.count(MAIL_HEAD) * json_len(MAIL_HEAD)
    envelope += sum(json_len(m.group(0)) for m in ENVELOPE.finditer(rest))
    return idle, protocol, envelope


def structured_sends(messages):
    """Bytes of the lead's own protocol: SendMessage calls whose message is an object, and
    their results."""
    ids, total = set(), 0
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_use" and b.get("name") == "SendMessage" \
                    and isinstance((b.get("input") or {}).get("message"), dict):
                ids.add(b.get("id"))
                total += len(compact(b).encode())
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in ids:
                total += len(compact(b).encode())
    return total


def only_chatter(body):
    """Whether the newest user turn of a request is nothing but idle notifications and
    protocol that asks nothing of the lead (a plan or permission request is work: it is not
    counted): the lead was woken for nothing else."""
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return False
    parts = list(texts_of(messages[-1]))
    if not parts or any(kind == "tool_result" for kind, _ in parts):
        return False
    text = "\n".join(t for _, t in parts)
    if "asks you to approve a plan" in text or "asks permission to run" in text:
        return False
    rest = OTHER_PROTOCOL.sub("", IDLE_LIST.sub("", IDLE_BLOCK.sub("", text)))
    return rest.replace(MAIL_HEAD, "").strip() == ""


def per_agent(requests, stream=None):
    """agent -> figures over its requests, in arrival order. A request's cacheable prefix is
    what it shares with the previous request of its stream: by default its agent's, with
    `stream(request)` that of the agent's previous request with the same key."""
    out = {}
    prev = {}
    for r in requests:
        agent = r.get("agent") or "(none)"
        a = out.setdefault(agent, {"requests": 0, "input": 0, "cached": 0, "shares": [], "sizes": [],
                                   "first_input": 0})
        c = canonical(r.get("body"))
        key = stream(r) if stream else agent
        lcp = common_prefix(prev[key], c) if key in prev else 0
        prev[key] = c
        a["requests"] += 1
        a["input"] += len(c)
        a["cached"] += lcp
        a["sizes"].append(len(c))
        if a["requests"] == 1:
            a["first_input"] = len(c)
        else:
            a["shares"].append(lcp / len(c))
    return out


def changes(requests):
    """What, in any agent's request, differs from its previous request other than by
    appending: a list of (agent, request number, where), empty when every request repeats
    its predecessor's system, tools and messages byte for byte and only adds to them (the
    last message may grow: new blocks are merged into a trailing user turn)."""
    found = []
    prev, count = {}, {}
    for r in requests:
        agent = r.get("agent") or "(none)"
        count[agent] = count.get(agent, 0) + 1
        cur = strip_cache_control(r.get("body") or {})
        p = prev.get(agent)
        prev[agent] = cur
        if p is None:
            continue
        for part in ("system", "tools"):
            if compact(p.get(part)) != compact(cur.get(part)):
                found.append((agent, count[agent], part))
        pm, cm = p.get("messages") or [], cur.get("messages") or []
        for i, x in enumerate(pm):
            y = cm[i] if i < len(cm) else None
            if y is None or compact(x) != compact(y):
                grew = i == len(pm) - 1 and y is not None and x.get("role") == y.get("role") \
                    and compact(y.get("content"))[:-1].startswith(compact(x.get("content"))[:-1])
                if not grew:
                    digest = y is not None and "<earlier work>" in compact(y.get("content"))[:80]
                    found.append((agent, count[agent], f"messages[{i}]" + (" (a new task's digest)" if digest else "")))
                break
    return found


def usage_output(env):
    """agent -> output tokens, from the state files (what the scripted server reported)."""
    out = {}
    state_dir = os.path.join(env.root, "teams", TEAM, "state")
    for name in [LEAD] + MATES:
        try:
            with open(os.path.join(state_dir, f"{name}.json")) as f:
                usage = json.load(f).get("usage") or {}
        except (OSError, ValueError):
            continue
        out[name] = usage.get("output_tokens", usage.get("outputTokens", 0)) or 0
    return out


def completed_tasks(env):
    """owner -> how many of the job's tasks it completed."""
    d = os.path.join(env.root, "tasks", TEAM)
    done = {}
    for name in os.listdir(d) if os.path.isdir(d) else []:
        if name.endswith(".json"):
            try:
                with open(os.path.join(d, name)) as f:
                    t = json.load(f)
            except (OSError, ValueError):
                continue
            if t.get("status") == "completed" and not (t.get("metadata") or {}).get("_internal"):
                owner = t.get("owner") or "(none)"
                done[owner] = done.get(owner, 0) + 1
    return done


# Claude Code's lead, for the same job: the estimate's inputs (docs/design/claude-code-client.md).
CC_PREFIX_TOKENS = 83_000 / 4   # docs/design/claude-code-client.md §4: a teammate's first request is about
                                # 83 KB (system 29.2 k chars + 13 tools); a lead's is no smaller
CC_IDLE_PER_TASK = 2            # the same §4: an idle notification at every turn end,
                                # and a task_assignment echo that makes a second turn per task
CC_IDLE_TOKENS = 260 / 4        # one idle_notification JSON in its <teammate-message> block
CC_TASKS, CC_BROADCASTS, CC_APPROVALS = 16, 2, 1


def claude_code_estimate(lead_turns, mean_messages_tokens):
    """Claude Code's lead input for this job, low and high. Both: our lead's turns that
    were not mere idle wakes, each re-reading Claude Code's fixed prefix and a conversation
    as long as ours plus the idle notifications received so far (half of them, on average).
    Low: the idle notifications ride along with other news, as ours do. High: each one is a
    turn of its own, as users report (user-pains.md §2.5)."""
    idle = CC_IDLE_PER_TASK * CC_TASKS + len(MATES) * CC_BROADCASTS + CC_APPROVALS
    per_request = CC_PREFIX_TOKENS + mean_messages_tokens + idle * CC_IDLE_TOKENS / 2
    return idle, lead_turns * per_request, (lead_turns + idle) * per_request


ALLOW = ["Bash(bash -n:*)", "Bash(bash check.sh:*)", "Bash(echo:*)"]
CC_KEY = "sk-ant-offline-00000000000000000000"  # offline: only the scripted server sees it


def prepare_claude_code(env):
    """What a Claude Code client needs to run the job unattended (docs/design/claude-code-
    client.md §2): the .claude.json entries that keep its first-run dialogs away, and the
    job's allow rules in the project's settings, where the client reads them (swarm's
    teammates get the same rules through --allow)."""
    with open(os.path.join(env.root, ".claude.json"), "w") as f:
        json.dump({"hasCompletedOnboarding": True,
                   "customApiKeyResponses": {"approved": [CC_KEY[-20:]], "rejected": []},
                   "projects": {os.path.realpath(env.work): {"hasTrustDialogAccepted": True}}}, f)
    os.makedirs(os.path.join(env.work, ".claude"))
    with open(os.path.join(env.work, ".claude", "settings.json"), "w") as f:
        json.dump({"permissions": {"allow": ALLOW}}, f)
    # On its default model the client turns its task tools off unless this opts in; swarm
    # passes CLAUDE_CODE_* variables on to its Claude Code teammates.
    return {**env.env, "ANTHROPIC_API_KEY": CC_KEY, "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}


def run_leg(claude_bin=None):
    """Runs the job once: a lead and swarm's teammates, or with `claude_bin` the same lead
    with Claude Code teammates (`swarm run --engine claude`). Returns what it did: the
    requests, the completed tasks by owner, the run's exit code and output, check.sh's
    result, the wall time and the output tokens of swarm's agents."""
    env = B.Env()
    try:
        subprocess.run(["git", "init", "-q"], cwd=env.work, env=env.env, check=True)
        with open(os.path.join(env.work, "check.sh"), "w") as f:
            f.write(CHECK)
        os.makedirs(os.path.join(env.work, "parts"))
        run_env, engine = env.env, []
        if claude_bin:
            run_env = prepare_claude_code(env)
            engine = ["--engine", "claude", "--claude-bin", claude_bin]
        log_path = os.path.join(env.dir, "requests.jsonl")
        url = start_server(env, job_script(), log_path)
        out_path = os.path.join(env.dir, "run.out")
        start = time.monotonic()
        with open(out_path, "w") as out:
            run = env.popen([B.SWARM, "--team", TEAM, "run", GOAL, "--teammates", str(len(MATES)),
                             "--no-attach", "--provider", "scripted", "--base-url", url,
                             "--cwd", env.work, "--permission-mode", "acceptEdits",
                             *[x for rule in ALLOW for x in ("--allow", rule)], "--max-turns", "60", *engine],
                            env=run_env, stdout=out, stderr=subprocess.STDOUT)
            try:
                code = run.wait(timeout=JOB_TIMEOUT * (2 if claude_bin else 1))
            except subprocess.TimeoutExpired:
                code = None
        wall = time.monotonic() - start
        keep(log_path, "job-claude" if claude_bin else "job")
        with open(out_path) as f:
            output = f.read()
        check = subprocess.run(["bash", "check.sh"], cwd=env.work, capture_output=True, text=True)
        return {"requests": read_requests(log_path), "owners": completed_tasks(env), "code": code,
                "output": output, "check": check, "wall": wall, "outputs": usage_output(env)}
    finally:
        env.close()


def failed(leg):
    """Why a leg's job failed, or None."""
    done = sum(leg["owners"].values())
    check = leg["check"]
    if leg["code"] == 0 and done == 16 and check.returncode == 0:
        return None
    return (f"swarm run exited {leg['code']} after {leg['wall']:.0f} s, {done} of 16 tasks completed, "
            f"check.sh exited {check.returncode}: {check.stdout.strip()}{check.stderr.strip()}")


def run_job(figures):
    leg = run_leg()
    why = failed(leg)
    if why:
        raise SystemExit(f"bench tokens: the job failed ({why}):\n{leg['output'][-3000:]}")
    figures["tokens.job_wall_s"] = round(leg["wall"], 1)
    report_job(leg["outputs"], leg["requests"], figures)
    return leg


def report_job(outputs, requests, figures):
    agents = per_agent(requests)
    order = [a for a in [LEAD] + MATES if a in agents] + sorted(a for a in agents if a not in [LEAD] + MATES)
    rows = []
    total = {"requests": 0, "input": 0, "cached": 0, "output": 0, "first": 0}
    for name in order:
        a = agents[name]
        share = a["cached"] / a["input"]
        later = a["cached"] / (a["input"] - a["first_input"]) if a["input"] > a["first_input"] else 0
        low = min(a["shares"]) if a["shares"] else 0
        out_tokens = outputs.get(name, 0)
        rows.append((name, a["requests"], tokens(a["input"]), tokens(a["cached"]), out_tokens, share, later, low))
        for k, v in (("requests", a["requests"]), ("input", a["input"]), ("cached", a["cached"]),
                     ("output", out_tokens), ("first", a["first_input"])):
            total[k] += v
        key = f"tokens.{name}"
        figures[f"{key}.requests"] = a["requests"]
        figures[f"{key}.input"] = round(tokens(a["input"]))
        figures[f"{key}.cached_prefix"] = round(tokens(a["cached"]))
        figures[f"{key}.output"] = out_tokens
        figures[f"{key}.prefix_share"] = round(share, 3)
        figures[f"{key}.prefix_share_after_first"] = round(later, 3)
        figures[f"{key}.prefix_share_lowest"] = round(low, 3)
        B.target(f"{key}.prefix_share", ">= 0.9")
    figures["tokens.total.requests"] = total["requests"]
    figures["tokens.total.input"] = round(tokens(total["input"]))
    figures["tokens.total.cached_prefix"] = round(tokens(total["cached"]))
    figures["tokens.total.output"] = total["output"]
    figures["tokens.total.prefix_share"] = round(total["cached"] / total["input"], 3)
    figures["tokens.total.prefix_share_after_first"] = round(total["cached"] / (total["input"] - total["first"]), 3)
    B.target("tokens.total.prefix_share", ">= 0.9")
    edits = changes(requests)
    digests = [e for e in edits if "digest" in e[2]]
    figures["tokens.requests_restarted_from_a_digest"] = len(digests)
    figures["tokens.requests_otherwise_not_append_only"] = len(edits) - len(digests)
    B.target("tokens.requests_otherwise_not_append_only", "0")

    lead = [r for r in requests if r.get("agent") == LEAD]
    lead_input = sum(len(canonical(r["body"])) for r in lead)
    idle = wrappers = envelope = own = 0
    woken = woken_input = 0
    messages_bytes = []
    for r in lead:
        body = r["body"]
        for m in body.get("messages") or []:
            for _, text in texts_of(m):
                i, p, e = chatter(text)
                idle, wrappers, envelope = idle + i, wrappers + p, envelope + e
        own += structured_sends(body.get("messages") or [])
        messages_bytes.append(len(compact(strip_cache_control(body.get("messages"))).encode()))
        if only_chatter(body):
            woken += 1
            woken_input += len(canonical(body))
    share = (idle + wrappers) / lead_input
    figures["tokens.lead.input_per_task"] = round(tokens(lead_input) / 16)
    figures["tokens.lead.idle_share"] = round(idle / lead_input, 4)
    figures["tokens.lead.protocol_wrapper_share"] = round(wrappers / lead_input, 4)
    figures["tokens.lead.idle_protocol_share"] = round(share, 4)
    B.target("tokens.lead.idle_protocol_share", "<= 0.03")
    figures["tokens.lead.own_protocol_answers_share"] = round(own / lead_input, 4)
    figures["tokens.lead.mail_envelope_share"] = round(envelope / lead_input, 4)
    figures["tokens.lead.turns"] = len(lead)
    figures["tokens.lead.turns_woken_by_idle_alone"] = woken
    figures["tokens.lead.input_share_of_those_turns"] = round(woken_input / lead_input, 4)

    system = tokens(len(compact(strip_cache_control(lead[0]["body"].get("system"))).encode()))
    tools_t = tokens(len(compact(strip_cache_control(lead[0]["body"].get("tools"))).encode()))
    mean_messages = tokens(sum(messages_bytes) / len(messages_bytes))
    cc_idle, cc_low, cc_high = claude_code_estimate(len(lead) - woken, mean_messages)
    figures["tokens.lead.cc_estimate_input_per_task_low"] = round(cc_low / 16)
    figures["tokens.lead.cc_estimate_input_per_task_high"] = round(cc_high / 16)
    B.target("tokens.lead.input_per_task",
             f"report; Claude Code's lead {round(cc_low / 16)}-{round(cc_high / 16)} (estimate)")

    print()
    print("tokens: the job. Tokens are bytes/4 of system+tools+messages; cached = the prefix shared with the "
          "agent's previous request")
    print(f"{'agent':<10} {'requests':>8} {'input':>9} {'cached':>9} {'output':>7} {'share':>6} "
          f"{'after 1st':>9} {'lowest':>6}  target (share)")
    for name, n, inp, cached, out_t, sh, later, low in rows:
        print(f"{name:<10} {n:>8} {inp:>9.0f} {cached:>9.0f} {out_t:>7} {sh:>6.3f} {later:>9.3f} {low:>6.3f}  >= 0.9")
    print(f"{'total':<10} {total['requests']:>8} {tokens(total['input']):>9.0f} {tokens(total['cached']):>9.0f} "
          f"{total['output']:>7} {total['cached'] / total['input']:>6.3f} "
          f"{total['cached'] / (total['input'] - total['first']):>9.3f}")
    print("  share: cached/input over all requests (a first request has nothing before it: 0); after 1st: the "
          "same without each agent's first request; lowest: the lowest single request after the first")
    if edits:
        print(f"  {len(edits)} requests changed what their agent had sent before (not only appended), first: "
              + "; ".join(f"{a} request {n}: {w}" for a, n, w in edits[:5]))
    else:
        print("  every request repeats its agent's previous request byte for byte (system, tools, every earlier "
              "message) and only appends")
    for name in order:
        a = agents[name]
        print(f"  {name}: first request {tokens(a['first_input']):.0f} tokens (uncached by definition), "
              f"{tokens(a['input'] - a['first_input'] - a['cached']) / max(1, a['requests'] - 1):.0f} new tokens "
              f"per later request on average")
    print(f"lead: system {system:.0f} + tools {tools_t:.0f} tokens per request; {len(lead)} requests; "
          f"{tokens(lead_input) / 16:.0f} input tokens per completed task")
    print(f"lead: idle notifications {idle / lead_input:.4f} + protocol wrappers {wrappers / lead_input:.4f} = "
          f"{share:.4f} of its input (target <= 0.03); its own protocol answers (SendMessage with a "
          f"structured message, and their results) {own / lead_input:.4f}; mail envelopes (header, tags) "
          f"{envelope / lead_input:.4f}")
    print(f"lead: {woken} of {len(lead)} turns were woken by idle notifications alone: "
          f"{woken_input / lead_input:.4f} of its input")
    print(f"Claude Code's lead, estimated: {cc_low / 16:.0f} to {cc_high / 16:.0f} input tokens per task "
          f"({cc_low:.0f} to {cc_high:.0f} in all; ours: {tokens(lead_input) / 16:.0f} per task, {tokens(lead_input):.0f})")
    print(f"  assumptions: a fixed prefix of {CC_PREFIX_TOKENS:.0f} tokens per request (the 83 KB first request "
          "of a Claude Code teammate, docs/design/claude-code-client.md §4; a lead's system prompt and tools are no smaller);")
    print(f"  {cc_idle} idle notifications: {CC_IDLE_PER_TASK} per task (its turn's end, and the extra turn of "
          "the task_assignment echo, docs/design/claude-code-client.md §4), one per teammate per broadcast (4 x 2), one "
          "after the plan approval;")
    print(f"  ~{CC_IDLE_TOKENS:.0f} tokens each, half of them in context on average; our lead's "
          f"{len(lead) - woken} other turns, each with our mean conversation ({mean_messages:.0f} tokens);")
    print(f"  low: the idle notifications ride along with other news; high: each is a turn of its own "
          f"(user-pains.md §2.5), {len(lead) - woken + cc_idle} turns; no compaction")
    print()


# ---------------------------------------------------------------------------- compaction

class Tail:
    """Reads a growing file from where it stopped, so a wait for a line costs the new bytes only."""

    def __init__(self, path):
        self.path, self.offset, self.partial, self.seen = path, 0, b"", set()

    def has(self, marker):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return False
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            self.seen.update(re.findall(rb"note \d{3}", line))
        return marker.encode() in self.seen


def flag_supported(env, command, flag):
    r = subprocess.run([B.SWARM, command, "--help"], env=env.env, capture_output=True, text=True)
    return flag in r.stdout


def run_compaction(figures):
    env = B.Env()
    try:
        team = "compact"
        log_path = os.path.join(env.dir, "requests.jsonl")
        url = start_server(env, {"rules": [
            {"name": "summary", "agent": "sink", "user_contains": "[swarm compaction]",
             "reply": {"text": "The lead sent me numbered notes on finished builds; I acknowledged each. Nothing is open."}},
            {"name": "ack", "agent": "sink", "reply": {"text": "Got it."}}],
            "default": {"text": "OK."}}, log_path)
        env.swarm("team", "create", team)
        # Compaction's flag: on `swarm spawn` for one teammate. Where it exists elsewhere only
        # (`swarm run`), the run below says so and goes without it.
        window = flag_supported(env, "spawn", "--context-window")
        elsewhere = [c for c in ("run", "teammate") if flag_supported(env, c, "--context-window")]
        argv = [B.SWARM, "--team", team, "spawn", "sink"] + (["--context-window", str(WINDOW)] if window else [])
        spawn_env = {**env.env, "SWARM_PROVIDER": "scripted", "SWARM_BASE_URL": url}
        r = subprocess.run(argv, env=spawn_env, cwd=env.work, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f"bench tokens: swarm spawn sink exited {r.returncode}: {r.stderr.strip()}")
        B.wait_for(lambda: (env.state(team, "sink") or {}).get("activity") == "idle", 30, "sink to be idle")

        tail = Tail(log_path)
        start = time.monotonic()
        for i in range(MESSAGES):
            marker = f"note {i:03d}"
            env.swarm("--team", team, "send", "sink",
                      f"{marker}: the build of part {i % 16 + 1:02d} finished; nothing for you to do, just acknowledge.",
                      "--from", LEAD)
            B.wait_for(lambda: tail.has(marker), 30, f"sink's request with message {i}", step=0.005)
        wall = time.monotonic() - start
        keep(log_path, "compaction")
        mine = [r for r in read_requests(log_path) if r.get("agent") == "sink"]
        sizes = [tokens(len(canonical(r["body"]))) for r in mine]
        summaries = sum(1 for r in mine if "[swarm compaction]" in compact((r["body"].get("messages") or [{}])[-1]))
    finally:
        env.close()
    figures["tokens.compaction.window_flag"] = "yes" if window else "no"
    figures["tokens.compaction.requests"] = len(sizes)
    figures["tokens.compaction.first"] = round(sizes[0])
    figures["tokens.compaction.max"] = round(max(sizes))
    figures["tokens.compaction.last"] = round(sizes[-1])
    figures["tokens.compaction.wall_s"] = round(wall, 1)
    drops = sum(1 for a, b in zip(sizes, sizes[1:]) if b < a)
    figures["tokens.compaction.size_drops"] = drops
    figures["tokens.compaction.summary_requests"] = summaries
    bounded = max(sizes) <= WINDOW
    figures["tokens.compaction.under_window"] = "yes" if bounded else "no"
    B.target("tokens.compaction.max", f"<= {WINDOW} (--context-window {WINDOW})")
    B.target("tokens.compaction.under_window", "yes")
    step = max(1, len(sizes) // 10)
    series = ", ".join(f"{i + 1}:{sizes[i]:.0f}" for i in range(0, len(sizes), step))
    print(f"tokens: {MESSAGES} messages to one teammate, "
          + (f"swarm spawn --context-window {WINDOW}" if window else
             "no `swarm spawn --context-window` in this swarm, so no compaction"
             + (f" (the flag exists on: {', '.join(elsewhere)})" if elsewhere else "")))
    print(f"  request size in tokens (request number: size): {series}, {len(sizes)}:{sizes[-1]:.0f}")
    print(f"  first {sizes[0]:.0f}, max {max(sizes):.0f}, last {sizes[-1]:.0f}; "
          f"{'stays under' if bounded else 'exceeds'} the {WINDOW}-token window; the request shrank {drops} times, "
          f"{summaries} of the requests asked for a summary")
    print()


# ---------------------------------------------------------------------------- beside Claude Code

CC_NAMED = re.compile(r'<teammate-message teammate_id="team-lead">\nYou are (\w+)\.')


def session_of(request):
    """The Claude Code session a request comes from (its body's metadata), or None."""
    try:
        return json.loads(((request.get("body") or {}).get("metadata") or {}).get("user_id") or "{}").get("session_id")
    except (ValueError, AttributeError):
        return None


def name_claude_code_requests(requests):
    """The requests with each Claude Code request's `agent` set to its teammate's name. The
    client sends no x-swarm-agent header; its body's metadata names its session, and the
    session's first instructions (the lead's Agent prompt, `You are <name>.`) name the
    teammate. Title requests belong to the session they name."""
    names = {}
    for r in requests:
        session = session_of(r)
        if r.get("agent") or not session or session in names:
            continue
        for m in (r.get("body") or {}).get("messages") or []:
            found = next((x for _, text in texts_of(m) for x in CC_NAMED.finditer(text)), None)
            if found:
                names[session] = found.group(1)
                break
    out = []
    for r in requests:
        if not r.get("agent"):
            session = session_of(r)
            r = {**r, "agent": names.get(session, f"claude:{(session or 'unknown')[:8]}")}
        out.append(r)
    return out


def by_system(request):
    """A Claude Code teammate's requests come in two streams, its conversation and its
    session-title requests (another system prompt); a prompt cache keeps both, so each
    request's cacheable prefix is measured against the previous request with its system."""
    return request.get("agent"), compact(strip_cache_control((request.get("body") or {}).get("system")))


def double_claims(requests):
    """Claims a Claude Code teammate made of a task another had claimed too: the client's
    TaskUpdate takes no lock, so two teammates that list at once can both take a task
    (and both do it). Counted from the claim results, each in the request that answers it."""
    claims = {}
    for r in requests:
        messages = (r.get("body") or {}).get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        for kind, text in texts_of(users[-1]) if users else []:
            for m in re.finditer(r"Updated task #(\d+) (?:owner, status|status, owner)", text if kind == "tool_result" else ""):
                claims[m.group(1)] = claims.get(m.group(1), 0) + 1
    return sum(n - 1 for n in claims.values())


def leg_rows(requests, owners, stream=None):
    """Per agent and for the team: requests, input, completed tasks, input per completed
    task, cacheable-prefix share. Returns (rows, team row), input in tokens."""
    agents = per_agent(requests, stream)
    order = [a for a in [LEAD] + MATES if a in agents] + sorted(a for a in agents if a not in [LEAD] + MATES)
    rows = []
    for name in order:
        a = agents[name]
        done = owners.get(name, 0)
        rows.append({"agent": name, "requests": a["requests"], "input": tokens(a["input"]), "tasks": done,
                     "per_task": tokens(a["input"]) / done if done else None, "share": a["cached"] / a["input"]})
    done = sum(owners.values())
    total = sum(a["input"] for a in agents.values())
    team = {"agent": "team", "requests": sum(a["requests"] for a in agents.values()), "input": tokens(total),
            "tasks": done, "per_task": tokens(total) / done if done else None,
            "share": sum(a["cached"] for a in agents.values()) / total}
    return rows, team


def run_beside_claude_code(figures, swarm_leg, claude_bin):
    """The same job again with Claude Code teammates, and the two bills side by side."""
    leg = run_leg(claude_bin)
    why = failed(leg)
    done = sum(leg["owners"].values())
    if done == 0:
        raise SystemExit(f"bench tokens: the job with Claude Code teammates completed nothing ({why}):\n"
                         f"{leg['output'][-3000:]}")
    named = name_claude_code_requests(leg["requests"])
    models = sorted({r["body"].get("model") for r in named
                     if r["agent"] != LEAD and CC_SYSTEM in compact(r["body"].get("system"))})
    legs = [("swarm", *leg_rows(swarm_leg["requests"], swarm_leg["owners"])),
            ("claude", *leg_rows(named, leg["owners"], stream=by_system))]
    print("tokens: the same job with swarm's teammates and with Claude Code teammates (swarm run --engine claude, "
          f"{os.path.basename(claude_bin)} {claude_version(claude_bin)}, model {', '.join(models) or '?'}); "
          "the lead is swarm's in both")
    print(f"{'teammates':<9} {'agent':<10} {'requests':>8} {'input':>9} {'tasks':>5} {'input/task':>10} {'share':>6}")
    for leg_name, rows, team in legs:
        for row in rows + [team]:
            per_task = f"{row['per_task']:.0f}" if row["per_task"] is not None else "-"
            print(f"{leg_name:<9} {row['agent']:<10} {row['requests']:>8} {row['input']:>9.0f} {row['tasks']:>5} "
                  f"{per_task:>10} {row['share']:>6.3f}")
            key = f"tokens.vs_claude.{leg_name}.{row['agent']}"
            figures[f"{key}.requests"] = row["requests"]
            figures[f"{key}.input"] = round(row["input"])
            figures[f"{key}.input_per_task"] = round(row["per_task"]) if row["per_task"] is not None else "-"
            figures[f"{key}.prefix_share"] = round(row["share"], 3)
    swarm_team, claude_team = legs[0][2], legs[1][2]
    ratio = swarm_team["per_task"] / claude_team["per_task"]
    mates = [sum(r["input"] for r in rows if r["agent"] != LEAD) / team["tasks"] for _, rows, team in legs]
    figures["tokens.vs_claude.claude_tasks_completed"] = done
    figures["tokens.vs_claude.claude_double_claims"] = double_claims(named)
    figures["tokens.vs_claude.claude_job_wall_s"] = round(leg["wall"], 1)
    figures["tokens.vs_claude.ratio"] = round(ratio, 3)
    figures["tokens.vs_claude.teammates_ratio"] = round(mates[0] / mates[1], 3)
    B.target("tokens.vs_claude.ratio", "<= 0.2")
    B.target("tokens.vs_claude.claude_tasks_completed", "16")
    print(f"  input/task: the agent's input over the tasks it completed; the team's over all completed tasks. "
          f"share: cacheable prefix / input (a Claude Code teammate's title requests measured against each other)")
    print(f"  ratio swarm / Claude Code, the team's input per completed task: {swarm_team['per_task']:.0f} / "
          f"{claude_team['per_task']:.0f} = {ratio:.3f} (target <= 0.2); the teammates' alone: "
          f"{mates[0]:.0f} / {mates[1]:.0f} = {mates[0] / mates[1]:.3f}")
    titles = [r for r in named if CC_TITLE in compact(r["body"].get("system"))]
    print(f"  Claude Code teammates: {done} of 16 tasks completed"
          + (f" (the job failed: {why})" if why else ", check.sh passes")
          + f"; {len(titles)} of their requests named the session ({tokens(sum(len(canonical(r['body'])) for r in titles)):.0f} tokens)"
          + f"; {figures['tokens.vs_claude.claude_double_claims']} claims of a task another teammate had claimed "
          "too (its TaskUpdate takes no lock: both did the task); they call the task and message tools without "
          "loading their schemas through ToolSearch first, which a real model would do: a lower bound")
    print()
    return claude_team


def claude_version(claude_bin):
    try:
        r = subprocess.run([claude_bin, "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.split()[0] if r.stdout.split() else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def tokens_suite():
    figures = {}
    start = time.monotonic()
    swarm_leg = run_job(figures)
    log(f"job: {time.monotonic() - start:.1f} s")
    claude_bin = B.OPTIONS.get("claude_bin")
    if claude_bin:
        start = time.monotonic()
        claude_team = run_beside_claude_code(figures, swarm_leg, claude_bin)
        log(f"job with Claude Code teammates: {time.monotonic() - start:.1f} s")
        start = time.monotonic()
        bench_tokens_lead.report(sys.modules[__name__], B, figures, claude_team, claude_bin)
        log(f"job under a Claude Code lead: {time.monotonic() - start:.1f} s")
    start = time.monotonic()
    run_compaction(figures)
    log(f"compaction: {time.monotonic() - start:.1f} s")
    return figures
