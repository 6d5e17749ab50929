"""Scenario: two tasks change the same file at the same time; the risk monitor halts both.

Both tasks are submitted without waiting; a slow first gate keeps the first one busy while the
second writes the same file. The second declares no file, so nothing said beforehand that they
would meet (tasks that declare the same file wait for each other instead: docs/landing.md,
``test_tasks_on_one_file_wait.py``). The monitor sees one file touched by two active tasks
(``conflicting_changes``) and halts them: the running step stops, no reviewer is asked, nothing
is committed, and each task waits on an escalation that ``escalations list`` shows and that
names the halt.
"""

from __future__ import annotations

import json

from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    project_config,
    pytest_gate,
    sleep_gate,
    with_new_function,
)
from tests.support.scenario_tasks import (
    APPROVE,
    branch_commits,
    entries,
    finished,
    new_id,
    submit,
)
from tests.support.stack import Stack

SLOW_GATE_S = 15.0


def test_two_tasks_writing_one_file_are_halted_as_conflicting_and_escalated(stack: Stack) -> None:
    config = project_config(
        stack, "parallel", gates={"additional": [sleep_gate(SLOW_GATE_S), pytest_gate()]}
    )
    repo = make_project(stack, "parallel", config)
    script = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]
    first, second = new_id("rival-a"), new_id("rival-b")
    for task_id, files in ((first, [FORMAT_PY]), (second, [])):
        code, _ = submit(stack, repo, task_id, files, script, wait=False)
        assert code == 0
    try:
        halted = {
            task_id: stack.wait_status(
                task_id,
                lambda s: s["pending_escalation"] is not None or bool(s["outcome"]),
                timeout_s=90,
                repo=repo,
            )
            for task_id in (first, second)
        }
        pending = {e["task_id"]: e for e in stack.cli_json("escalations", "list", repo=repo)}
        for task_id, status in halted.items():
            other = second if task_id == first else first
            escalation = status["pending_escalation"]
            assert escalation is not None, json.dumps(status)[-3000:]
            assert escalation["reason"] == "conflicting_changes"
            assert escalation["source"] == "halt"
            assert other in escalation["message"] and FORMAT_PY in escalation["message"]
            assert status["halted"] is True
            # Halted in the gates step: the reviewer was never asked and nothing was committed.
            assert entries(status, "review") == [], status["log"]
            assert status["commit_id"] is None
            assert pending[task_id]["reason"] == "conflicting_changes"
        shown = stack.cli("escalations", "show", first, repo=repo)
        assert shown.returncode == 0, shown.stderr
        assert "conflicting_changes" in shown.stdout and "halt" in shown.stdout
    finally:
        for task_id in (first, second):
            stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=repo)
    for task_id in (first, second):
        assert finished(stack, repo, task_id)["outcome"] == "aborted"
        assert branch_commits(repo, task_id) == []
