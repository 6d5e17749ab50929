"""Scenario: three tasks declaring one file, submitted together, wait for each other and land in
order, each tested on top of the one before, with no halt (issue 28, item 2).

The project is a copy of mdurl; each task's developer is a coding-agent CLI (``tests/fakes/
edit_cli.py``) that edits ``mdurl/_format.py`` in place, each in another line. The three
``semspec task submit`` run right after one another. The first task holds in its developer step
until the test lets it go: meanwhile the second shows ``waiting on <first>`` and the third waits
on both. Each is landed once approved; the next then forks from the landed base, so its gates
ran on a tree holding the earlier changes and it lands as a fast-forward. Without the wait the
second and third run beside the first and the risk monitor halts them (``conflicting_changes``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.mdurl_project import FORMAT_PY, make_project, project_config
from tests.support.scenario_tasks import APPROVE, finished, new_id, submit
from tests.support.stack import Stack

EDIT_CLI = Path(__file__).resolve().parents[1] / "fakes" / "edit_cli.py"
EDITS = [
    ('result = ""', 'result = ""  # built part by part'),
    ("# ipv6 address", "# ipv6 goes in brackets"),
    ("return result", "return result  # the text the URL was parsed from"),
]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def land(stack: Stack, repo: Path, task_id: str) -> dict[str, Any]:
    done = stack.cli("task", "land", task_id, "--json", repo=repo, timeout=240)
    assert done.returncode == 0, f"land {task_id}: {done.stdout} {done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def no_halt(status: dict[str, Any]) -> None:
    """The task was never halted, flagged or escalated, and no risk signal reached it."""
    trail = json.dumps(status)[-3000:]
    assert not status["halted"] and status["pending_escalation"] is None, trail
    assert not [e for e in status["log"] if e["kind"] in ("signal", "escalated")], trail


def test_three_tasks_on_one_file_submitted_together_wait_and_land_in_order_without_a_halt(
    stack: Stack,
) -> None:
    command = f"{sys.executable} {EDIT_CLI} --file {FORMAT_PY}"
    developer = {"provider": "command", "model": "gpt-4.1", "command": command, "timeout_s": 300}
    repo = make_project(
        stack, "waiting", project_config(stack, "waiting", models={"developer": developer})
    )
    go = stack.root / f"{new_id('go')}.flag"
    ids = [new_id("first"), new_id("second"), new_id("third")]
    for number, (task_id, (old, new)) in enumerate(zip(ids, EDITS, strict=True)):
        hold = f" HOLD<<{go}>>" if number == 0 else ""
        criterion = f"EDIT<<{old}>>INTO<<{new}>>{hold}"
        script = [{"reviewer": APPROVE}]
        code, out = submit(
            stack, repo, task_id, [FORMAT_PY], script, criterion=criterion, wait=False
        )
        assert code == 0 and out["task_id"] == task_id, out

    # The first runs (held in its developer step); the others wait, and say on whom.
    stack.wait_status(ids[0], lambda s: s["phase"] == "developer", 90, repo=repo)
    second = stack.wait_status(ids[1], lambda s: s["phase"] == "waiting", 60, repo=repo)
    assert second["waiting_on"] == [ids[0]] and second["worktree"] is None
    third = stack.wait_status(ids[2], lambda s: s["phase"] == "waiting", 60, repo=repo)
    assert third["waiting_on"] == [ids[0], ids[1]]
    shown = stack.cli("task", "status", ids[1], repo=repo).stdout
    assert "  state: waiting" in shown and f"  waiting on {ids[0]}\n" in shown
    # A waiting task can be cancelled: it ends at once, and no one waits for it.
    extra = new_id("cancelled")
    code, out = submit(
        stack,
        repo,
        extra,
        [FORMAT_PY],
        [{"reviewer": APPROVE}],
        criterion="EDIT<<a>>INTO<<b>>",
        wait=False,
    )
    assert code == 0, out
    stack.wait_status(extra, lambda s: s["phase"] == "waiting", 60, repo=repo)
    cancel = stack.cli("task", "cancel", extra, repo=repo)
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    gone = finished(stack, repo, extra, 60)
    assert gone["outcome"] == "cancelled" and gone["worktree"] is None, gone
    go.write_text("go")

    forks, landed = [], [git(repo, "rev-parse", "main")]
    for number, task_id in enumerate(ids):
        done = finished(stack, repo, task_id, 180)
        assert done["outcome"] == "approved", json.dumps(done)[-3000:]
        no_halt(done)
        forks.append(done["base_commit"])
        if number + 1 < len(ids):
            # Approved but not landed: the next task still waits for it.
            after = stack.status(ids[number + 1], repo=repo)
            assert after["phase"] == "waiting" and ids[number] in after["waiting_on"], after
            # ... and its status says what moves it: landing the approved task.
            assert ids[number] in after["waiting_for_land"], after
            shown = stack.cli("task", "status", ids[number + 1], repo=repo).stdout
            assert f"  next: semspec task land {ids[number]} " in shown, shown
        result = land(stack, repo, task_id)
        # Forked from the landed base: gated on the earlier changes, nothing to rebase.
        assert (result["outcome"], result["method"]) == ("landed", "fast-forward"), result
        landed.append(git(repo, "rev-parse", "main"))

    # Each task forked from the base its predecessor left, so its gates saw their changes.
    assert forks == landed[:-1]
    final = (repo / FORMAT_PY).read_text()
    assert all(new in final for _, new in EDITS)
    for task_id in ids[1:]:
        log = [e["message"] for e in stack.status(task_id, repo=repo)["log"]]
        assert any(m.startswith("waiting on ") for m in log), log
        assert any(m.startswith("going on from main") for m in log), log
    pending = json.dumps(stack.cli_json("escalations", "list", repo=repo))
    assert not [task_id for task_id in ids if task_id in pending], pending


def test_a_plan_task_on_an_earlier_plan_tasks_file_waits_for_it_to_land(stack: Stack) -> None:
    command = f"{sys.executable} {EDIT_CLI} --file {FORMAT_PY}"
    developer = {"provider": "command", "model": "gpt-4.1", "command": command, "timeout_s": 300}
    repo = make_project(
        stack,
        "waiting-plan",
        project_config(stack, "waiting-plan", models={"developer": developer}),
    )
    script = stack.root / "scripts" / "waiting-plan-approve.yaml"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(yaml.safe_dump({"iterations": [{"reviewer": APPROVE}]}), encoding="utf-8")
    first, second = new_id("plan-first"), new_id("plan-second")
    plan_id = new_id("plan")
    tasks = [
        {
            "id": task_id,
            "title": f"edit {task_id}",
            "files": [FORMAT_PY],
            "script": str(script),
            "criteria": [f"EDIT<<{old}>>INTO<<{new}>>"],
        }
        for task_id, (old, new) in zip((first, second), EDITS[:2], strict=True)
    ]
    path = stack.root / f"{plan_id}.yaml"
    path.write_text(yaml.safe_dump({"id": plan_id, "title": "two edits", "tasks": tasks}))
    done = stack.cli("plan", "submit", str(path), "--json", repo=repo)
    assert done.returncode == 0, done.stdout + done.stderr

    # Independent tasks of one plan start together; the later one waits for the earlier.
    waiting = stack.wait_status(second, lambda s: s["phase"] == "waiting", 90, repo=repo)
    assert waiting["waiting_on"] == [first]
    approved = finished(stack, repo, first, 180)
    assert approved["outcome"] == "approved", json.dumps(approved)[-3000:]
    assert stack.status(second, repo=repo)["phase"] == "waiting"
    assert land(stack, repo, first)["method"] == "fast-forward"
    base = git(repo, "rev-parse", "main")

    after = finished(stack, repo, second, 180)
    assert after["outcome"] == "approved" and after["base_commit"] == base, after
    no_halt(approved)
    no_halt(after)
    assert land(stack, repo, second)["method"] == "fast-forward"
    plan = stack.cli_json("plan", "status", plan_id, repo=repo)
    assert plan["outcome"] == "approved"
