"""The commands printed for an escalated task name every answer, extend-budget included.

A task stopped with ``budget_exhausted`` is most often answered with ``extend-budget``; the
hints after ``task submit --wait``, in ``task status`` and in ``escalations show`` name it, and
``--extra-retries`` help says what the answer grants (every answer starts the count again).
"""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console

from semspec.client.task_render import render_final
from semspec.vocabulary.suggestions import suggested_actions
from semspec.workflow.task.messages import Escalation, TaskStatus


def _escalated(
    task_id: str, reason: str = "budget_exhausted", message: str = "no retry left (3 allowed)"
) -> TaskStatus:
    status = TaskStatus(task_id, "A task", "escalated", 4, 4, 3)
    status.pending_escalation = Escalation(f"{task_id}-1", task_id, reason, message, 4, 4)
    return status


def _final_text(status: TaskStatus) -> str:
    console = Console(record=True, width=200)
    render_final(console, status)
    return console.export_text()


def test_the_final_lines_of_an_escalated_task_name_extend_budget() -> None:
    console = Console(record=True, width=200)
    render_final(console, _escalated("t-7"))
    text = console.export_text()
    assert "semspec escalations resolve t-7 --action extend-budget --extra-retries N" in text


def test_an_unknown_price_says_that_approve_runs_the_model_without_a_price() -> None:
    status = _escalated("t-8", "unknown_price", "model m has no price")
    status.budget_usd = 1.0

    text = _final_text(status)

    assert (
        "run the model without a price for the rest of the task: "
        "semspec escalations resolve t-8 --action approve"
    ) in text
    assert "approve|abort" not in text


def test_dollars_are_offered_only_to_a_task_with_a_dollar_budget() -> None:
    retries = _escalated("t-9")
    dollars = _escalated("t-9", message="dollar budget spent: $0.06 of $0.05")
    dollars.budget_usd = 0.05

    assert "--extra-usd" not in _final_text(retries)
    assert "add dollars to the budget: " in _final_text(dollars)


def test_escalations_show_suggests_extend_budget() -> None:
    commands = [a.command for a in suggested_actions("t-7", "budget_exhausted")]
    assert "semspec escalations resolve t-7 --action extend-budget --extra-retries N" in commands


def test_extra_retries_help_says_the_count_starts_again() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "escalations", "resolve", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.replace("│", " ").split())
    assert "every answer also starts the retry count again" in text
