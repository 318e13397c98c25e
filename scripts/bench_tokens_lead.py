"""The third leg of scripts/bench tokens (with --claude-bin): the same job led by a real
Claude Code lead whose teammates are swarm's (CLAUDE_CODE_TEAMMATE_COMMAND=swarm), the
way most Claude Code users would meet swarm. The lead runs interactively in a private
tmux server, offline against the same scripted server; its script does what swarm's
scripted lead does, in the client's own tools: it creates the 16 tasks tier by tier
(TaskCreate, then TaskUpdate addBlockedBy for the dependencies, all before anyone is
spawned), spawns bob, alice, carol and dave with Agent, briefs them and opens the last
tier with a message to each (the client refuses SendMessage to "*"). The teammates run swarm's engine on the
scripted provider (so their requests carry their names) with the same rules as in the
first leg. Differences from that leg, printed with the figures: no teammate plans (the
client asks its teammates for plans only when the lead itself is in plan mode; bob's
first ExitPlanMode is told to go ahead), and no permission requests (the client passes
its teammates --dangerously-skip-permissions). The leg ends when the 16 tasks are
completed (counted from the teammates' own TaskUpdate results in the request log: the
client may clear a finished task list) and the team has made no request for 3 s (the
lead has read the last reports); then the team's tmux server is killed."""
import json
import os
import re
import subprocess
import time

LEAD_SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude."
COMPLETED = re.compile(r"Updated task #(\d+) \(status=completed\)")


def lead_rules(T):
    """The Claude Code lead's side of the job, known by its system prompt (swarm's
    teammates have another); tried before the first leg's rules."""
    lead = {"system_contains": LEAD_SYSTEM}
    call = T.call
    rules = [{"name": "ccl: a session title", "system_contains": T.CC_TITLE,
              "reply": {"text": '{"title": "Shell pipeline parts"}'}}]

    def rule(name, **kw):
        rules.append({"name": f"ccl: {name}", **lead, **kw})

    def create(ids):
        made = [call("TaskCreate", **{k: v for k, v in T.task(n).items() if k != "blockedBy"}) for n in ids]
        edges = [call("TaskUpdate", taskId=str(n), addBlockedBy=[str(d) for d in T.NEEDS[n]])
                 for n in ids if T.NEEDS[n]]
        return made + edges

    rule("tier 1", user_contains="Build the 16-part", no_tool_result=True, times=1,
         reply={"text": "Sixteen parts in four tiers; I create them tier by tier with their dependencies.",
                "tool_calls": create(range(1, 5))})
    for last, ids in ((4, range(5, 9)), (8, range(9, 13)), (12, range(13, 17))):
        rule(f"after #{last}", tool_result_contains=f"Task #{last} created successfully", times=1,
             reply={"tool_calls": create(ids)})
    rule("spawns the team", tool_result_contains="Task #16 created successfully", times=1,
         reply={"text": "All 16 tasks exist; the team joins.",
                "tool_calls": [call("Agent", name=n, description="pipeline builder", subagent_type="general-purpose",
                                    prompt=f"You are {n}. Claim ready tasks, build them, check them, report to team-lead.")
                               for n in T.MATES]})
    def to_everyone(summary, message):  # the client has no broadcast: one message each
        return [call("SendMessage", to=n, summary=summary, message=message) for n in T.MATES]

    rule("briefs everyone", tool_result_contains="Spawned successfully", times=1,
         reply={"tool_calls": to_everyone("how we work", "Tasks come in four tiers; claim whatever is ready. "
                                          "Mark a task completed once its check passes, then tell me in one line.")})
    rule("opens the last tier", user_contains="Task #12 is done", times=1,
         reply={"text": "Tier 3 is done.",
                "tool_calls": to_everyone("last tier open", "Tiers 1-3 are done: #13-#16 are next, #16 runs check.sh.")})
    rule("notes mail", reply={"text": "Noted."})
    return rules


def completions(log_path):
    """agent -> the task ids it completed, from the TaskUpdate results in the request log."""
    done = {}
    try:
        with open(log_path) as f:
            lines = f.readlines()
    except OSError:
        return done
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line being written
        if r.get("agent"):
            for m in COMPLETED.finditer(json.dumps(r.get("body") or {})):
                done.setdefault(r["agent"], set()).add(m.group(1))
    return done


def settle(log_path, quiet=3.0, bound=60.0):
    """Waits until the team has made no model request for `quiet` seconds (at most
    `bound`): the lead reads the last reports, as the first leg's lead does before it ends."""
    deadline = time.monotonic() + bound
    size, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = os.path.getsize(log_path)
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.2)


def run_leg(T, B, claude_bin):
    """Runs the job under a Claude Code lead; returns what it did, as T.run_leg does."""
    env = B.Env()
    try:
        subprocess.run(["git", "init", "-q"], cwd=env.work, env=env.env, check=True)
        with open(os.path.join(env.work, "check.sh"), "w") as f:
            f.write(T.CHECK)
        os.makedirs(os.path.join(env.work, "parts"))
        run_env = T.prepare_claude_code(env)
        with open(os.path.join(env.root, "settings.json"), "w") as f:
            json.dump({"skipDangerousModePermissionPrompt": True}, f)  # no bypass-mode dialog
        log_path = os.path.join(env.dir, "requests.jsonl")
        script = T.job_script()
        script["rules"] = lead_rules(T) + script["rules"]
        url = T.start_server(env, script, log_path)
        # The lead as a person starts it, in its own tmux server; the teammates' provider
        # and key in that server's environment, which the client's panes inherit.
        tmux_env = {**run_env, "SWARM_PROVIDER": "scripted", "SWARM_BASE_URL": url}
        tmux_env.pop("SWARM_ROOT", None)
        argv = ["tmux", "-L", env.socket, "-f", "/dev/null", "new-session", "-d", "-s", "lead", "-x", "220",
                "-y", "50", "-c", env.work, "--", "env", "IS_SANDBOX=1", f"CLAUDE_CONFIG_DIR={env.root}",
                f"ANTHROPIC_BASE_URL={url}", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1",
                f"CLAUDE_CODE_TEAMMATE_COMMAND={B.SWARM}", claude_bin, "--dangerously-skip-permissions",
                "--teammate-mode", "tmux", T.GOAL]
        start = time.monotonic()
        subprocess.run(argv, env=tmux_env, check=True, timeout=30)
        deadline = start + T.JOB_TIMEOUT * 2
        while time.monotonic() < deadline and sum(map(len, completions(log_path).values())) < 16:
            time.sleep(0.5)
        wall = time.monotonic() - start
        settle(log_path)
        pane = subprocess.run(["tmux", "-L", env.socket, "capture-pane", "-p", "-t", "lead"],
                              capture_output=True, text=True).stdout
        subprocess.run(["tmux", "-L", env.socket, "kill-server"], capture_output=True)
        T.keep(log_path, "job-claude-lead")
        check = subprocess.run(["bash", "check.sh"], cwd=env.work, capture_output=True, text=True)
        owners = {a: len(ids) for a, ids in completions(log_path).items()}
        requests = [r if r.get("agent") else {**r, "agent": T.LEAD} for r in T.read_requests(log_path)]
        return {"requests": requests, "owners": owners, "check": check, "wall": wall, "pane": pane}
    finally:
        env.close()


def report(T, B, figures, claude_leg_team, claude_bin):
    """Runs the leg and prints it beside the Claude Code teammates' leg (`claude_leg_team`,
    that leg's team row)."""
    leg = run_leg(T, B, claude_bin)
    done = sum(leg["owners"].values())
    if done == 0:
        raise SystemExit(f"bench tokens: the job under a Claude Code lead completed nothing; its pane:\n{leg['pane']}")
    rows, team = T.leg_rows(leg["requests"], leg["owners"], stream=T.by_system)
    print(f"tokens: the same job under a Claude Code lead ({os.path.basename(claude_bin)} "
          f"{T.claude_version(claude_bin)}) with swarm's teammates (CLAUDE_CODE_TEAMMATE_COMMAND)")
    print(f"{'agent':<10} {'requests':>8} {'input':>9} {'tasks':>5} {'input/task':>10} {'share':>6}")
    for row in rows + [team]:
        per_task = f"{row['per_task']:.0f}" if row["per_task"] is not None else "-"
        print(f"{row['agent']:<10} {row['requests']:>8} {row['input']:>9.0f} {row['tasks']:>5} {per_task:>10} "
              f"{row['share']:>6.3f}")
        key = f"tokens.claude_lead.{row['agent']}"
        figures[f"{key}.input"] = round(row["input"])
        figures[f"{key}.input_per_task"] = round(row["per_task"]) if row["per_task"] is not None else "-"
        figures[f"{key}.prefix_share"] = round(row["share"], 3)
    ratio = team["per_task"] / claude_leg_team["per_task"]
    figures["tokens.claude_lead.tasks_completed"] = done
    figures["tokens.claude_lead.wall_s"] = round(leg["wall"], 1)
    figures["tokens.claude_lead.ratio"] = round(ratio, 3)
    B.target("tokens.claude_lead.tasks_completed", "16")
    check = leg["check"]
    print(f"  {done} of 16 tasks completed in {leg['wall']:.0f} s; check.sh "
          f"{'passes' if check.returncode == 0 else 'fails: ' + (check.stdout + check.stderr).strip()[:200]}. "
          "No plan and no permission requests (see scripts/bench_tokens_lead.py).")
    print(f"  ratio Claude Code lead + swarm teammates / swarm lead + Claude Code teammates, the team's input "
          f"per completed task: {team['per_task']:.0f} / {claude_leg_team['per_task']:.0f} = {ratio:.3f}")
    print()
