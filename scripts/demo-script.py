#!/usr/bin/env python3
"""Writes crates/demo/src/script.json: the scripted model that drives `swarm demo`.

The demo job: three independent bash tools and an entry point that needs them, checked
by check.sh. The lead creates the tasks one at a time (so their ids are 1-4 in order)
and spawns bob in plan mode; bob claims the first task and sends a plan; the lead
approves it, brings in alice and carol, and briefs everyone. Teammates claim tasks,
write the file the task gives, run its check, mark it completed and report. Rules are tried in
order; see crates/model-server/src/script.rs for the format.

    scripts/demo-script.py        # regenerate after editing
"""
import json
import os

FILES = {
    "lib/upper.sh": "#!/usr/bin/env bash\n# upper: print the first argument in upper case.\nprintf '%s\\n' \"${1^^}\"",
    "lib/lower.sh": "#!/usr/bin/env bash\n# lower: print the first argument in lower case.\nprintf '%s\\n' \"${1,,}\"",
    "lib/reverse.sh": "#!/usr/bin/env bash\n# reverse: print the first argument backwards.\ns=${1:-}\nout=\"\"\nfor ((i = ${#s} - 1; i >= 0; i--)); do out+=\"${s:i:1}\"; done\nprintf '%s\\n' \"$out\"",
    "toolkit.sh": "#!/usr/bin/env bash\n# toolkit: small text tools. Usage: toolkit.sh upper|lower|reverse TEXT\nhere=$(dirname \"$0\")\ncase \"${1:-}\" in\n  upper | lower | reverse) exec bash \"$here/lib/$1.sh\" \"${2:-}\" ;;\n  *)\n    echo \"usage: toolkit.sh upper|lower|reverse TEXT\" >&2\n    exit 2\n    ;;\nesac",
}


def task(n, path, what, check):
    done = f"task #{n} checked: {path} is good"
    return {
        "subject": f"Write {path}",
        "activeForm": f"Writing {path}",
        "description": f"Create {path}: {what}\n\nFile: {path}\n```\n{FILES[path]}\n```\nCheck: `{check} && echo \"{done}\"`",
    }


TASKS = [
    task(1, "lib/upper.sh", "prints its first argument in upper case.", "bash -n lib/upper.sh"),
    task(2, "lib/lower.sh", "prints its first argument in lower case.", "bash -n lib/lower.sh"),
    task(3, "lib/reverse.sh", "prints its first argument backwards.", "bash -n lib/reverse.sh"),
    task(4, "toolkit.sh", "the entry point that runs the three tools in lib/; then run the job's check.", "bash check.sh"),
]
TASKS[3]["blockedBy"] = ["1", "2", "3"]

LEAD = "team-lead"
CLAIMED = r"(?s)claimed task #(?P<id>\d+).*?File: (?P<path>\S+)\n```\n(?P<content>.*?)\n```"
rules = []


def rule(name, **kw):
    rules.append({"name": name, **kw})


def call(tool, **input):
    return {"name": tool, "input": input}


# The lead.
rule("lead creates task 1", agent=LEAD, user_contains="Goal:", no_tool_result=True,
     reply={"text": "Four tasks: three independent tools, then the entry point that needs them.",
            "tool_calls": [call("TaskCreate", **TASKS[0])]})
rule("lead creates task 2", agent=LEAD, tool_result_contains="Task #1 created",
     reply={"tool_calls": [call("TaskCreate", **TASKS[1])]})
rule("lead creates task 3", agent=LEAD, tool_result_contains="Task #2 created",
     reply={"tool_calls": [call("TaskCreate", **TASKS[2])]})
rule("lead creates task 4 and the first teammate", agent=LEAD, tool_result_contains="Task #3 created",
     reply={"text": "Task #4 waits for the other three. bob goes first, in plan mode: I review his plan before the others join.",
            "tool_calls": [
                call("TaskCreate", **TASKS[3]),
                call("Agent", name="bob", mode="plan", description="careful builder",
                     prompt="You are bob. For each task, present a plan with ExitPlanMode and wait for approval before writing anything."),
            ]})
rule("lead waits for bob's plan", agent=LEAD, tool_result_contains="name: bob",
     reply={"text": "Waiting for bob's plan."})
rule("lead approves a plan and brings in the others", agent=LEAD,
     user_regex=r"teammate_id=\"(?P<who>[^\"]+)\"[^>]*>\n[^\n]* asks you to approve a plan \(request id (?P<rid>[^)]+)\)",
     reply={"text": "The plan writes the file the task asks for and checks it: approved. Now alice and carol join.",
            "tool_calls": [
                call("SendMessage", to="{{who}}",
                     message={"type": "plan_approval_response", "request_id": "{{rid}}", "approve": True}),
                call("Agent", name="alice", description="tool builder",
                     prompt="You are alice. Claim ready tasks, build them, check them, report to team-lead."),
                call("Agent", name="carol", description="tool builder",
                     prompt="You are carol. Claim ready tasks, build them, check them, report to team-lead."),
            ]})
rule("lead briefs everyone", agent=LEAD, tool_result_contains="Approved bob's request",
     reply={"tool_calls": [call("SendMessage", to="*", summary="how we work",
                                message="Tasks #1-#3 are independent: one each. #4 waits for all three and runs check.sh. Mark a task completed once its check passes.")]})
rule("lead waits", agent=LEAD, tool_result_contains="Message broadcast",
     reply={"text": "The team is at work; I'll wait for news."})
rule("lead grants a permission", agent=LEAD,
     user_regex=r"teammate_id=\"(?P<who>[^\"]+)\"[^>]*>\n[^\n]* asks permission to run (?P<what>.*?) \(request id (?P<rid>[^)]+)\)",
     reply={"text": "{{what}} is part of its task: allowed.",
            "tool_calls": [call("SendMessage", to="{{who}}",
                                message={"type": "permission_response", "request_id": "{{rid}}", "approve": True})]})
rule("lead after a permission", agent=LEAD, tool_result_contains="Approved", reply={"text": "Approved."})
rule("lead verifies", agent=LEAD, user_contains="All tasks are completed",
     reply={"text": "Let me look at what was built.", "tool_calls": [call("Glob", pattern="**/*.sh")]})
rule("lead sums up", agent=LEAD, tool_result_contains="toolkit.sh",
     reply={"text": "Done: lib/upper.sh, lib/lower.sh, lib/reverse.sh and toolkit.sh are written, and check.sh passes."})
rule("lead notes mail", agent=LEAD, reply={"text": "Noted."})

# bob, in plan mode: a plan first, the work once it is approved.
rule("bob plans", agent="bob", user_regex=CLAIMED, no_tool_result=True,
     reply={"tool_calls": [call("ExitPlanMode",
                                plan="Plan for task #{{id}}:\n1. Write {{path}} as the task gives it.\n2. Run its check.\n3. Mark the task completed and tell team-lead.\n\nFile: {{path}}\n```\n{{content}}\n```")]})
# bob takes a moment over his approved plan: alice and carol, spawned as the lead
# approves it, are up by then and claim the other tasks, so the work really is shared.
rule("bob carries out the plan", agent="bob", tool_result_contains="your plan", delay_ms=1500,
     user_regex=r"(?s)(approved your plan|go ahead with your plan).*?Plan for task #(?P<id>\d+):.*?File: (?P<path>\S+)\n```\n(?P<content>.*?)\n```",
     reply={"tool_calls": [call("Write", file_path="{{path}}", content="{{content}}\n"), call("TaskGet", taskId="{{id}}")]})
rule("bob revises", agent="bob", tool_result_contains="rejected your plan", reply={"text": "I will revise my plan."})

# Everyone: write the file, look the task up for its check, run it, report. The check rule
# comes first: the task's description (in TaskGet's result) quotes the line the check
# prints, which the report rule waits for.
rule("write", user_regex=CLAIMED, no_tool_result=True,
     reply={"text": "On it: {{path}}.", "tool_calls": [call("Write", file_path="{{path}}", content="{{content}}\n"), call("TaskGet", taskId="{{id}}")]})
rule("check", user_regex=r"(?s)#(?P<id>\d+) \[in_progress\].*?Check: `(?P<check>[^`]+)`",
     reply={"tool_calls": [call("Bash", command="{{check}}", description="run the task's check")]})
rule("report", user_regex=r"task #(?P<id>\d+) checked: (?P<path>\S+) is good",
     reply={"tool_calls": [call("TaskUpdate", taskId="{{id}}", status="completed"),
                           call("SendMessage", to=LEAD, summary="task #{{id}} done", message="Task #{{id}} is done: {{path}} is written and its check passes.")]})
rule("done", tool_result_contains="Message sent to team-lead", reply={"text": "Done."})
rule("mail", user_contains="New message(s) from your team", no_tool_result=True, reply={"text": "Understood."})
rule("stuck", user_contains="is still not completed", reply={"text": "Its check did not pass; I cannot complete it."})

TEAMMATE_RULES = rules[[r["name"] for r in rules].index("write"):]


def write(name, rules):
    script = {"rules": rules, "default": {"text": "OK."}}
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "crates", "demo", "src", name)
    with open(out, "w") as f:
        json.dump(script, f, indent=2)
        f.write("\n")
    print(f"wrote {out}: {len(rules)} rules")


write("script.json", rules)

# The worktrees job (`swarm demo --job worktrees`): toolkit.sh is there already; three
# teammates each build one tool in a worktree of their own and commit it as its check;
# the merge queue lands each branch on the job's branch, running lint.sh after each.
def worktree_task(n, path, what):
    t = task(n, path, what, f"bash -n {path} && git add {path} && git commit -q -m 'Add {path}'")
    return t


WT_TASKS = [
    worktree_task(1, "lib/upper.sh", "prints its first argument in upper case."),
    worktree_task(2, "lib/lower.sh", "prints its first argument in lower case."),
    worktree_task(3, "lib/reverse.sh", "prints its first argument backwards."),
]
rules = []
rule("lead plans and spawns the team in worktrees", agent=LEAD, user_contains="Goal:", no_tool_result=True,
     reply={"text": "Three independent tools: one teammate each, each in a worktree of its own. The merge queue lands each branch as its task completes.",
            "tool_calls": [call("TaskCreate", **t) for t in WT_TASKS] + [
                call("Agent", name=name, isolation="worktree", description="tool builder",
                     prompt=f"You are {name}. Claim a ready task, build it in your worktree, run its check (which commits it), complete it and report to team-lead.")
                for name in ["alice", "bob", "carol"]]})
rule("lead waits", agent=LEAD, tool_result_contains="name: carol",
     reply={"text": "The team is at work in its worktrees; I'll wait for news."})
rule("lead verifies", agent=LEAD, user_contains="All tasks are completed",
     reply={"text": "Every branch has landed; let me look at the result.", "tool_calls": [call("Glob", pattern="lib/*.sh")]})
rule("lead sums up", agent=LEAD, tool_result_contains="reverse.sh",
     reply={"text": "Done: lib/upper.sh, lib/lower.sh and lib/reverse.sh were built in three worktrees and merged one at a time, lint.sh green after each."})
rule("lead notes mail", agent=LEAD, reply={"text": "Noted."})
write("script-worktrees.json", rules + TEAMMATE_RULES)
