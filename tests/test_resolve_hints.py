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


def _escalated(task_id: str) -> TaskStatus:
    status = TaskStatus(task_id, "A task", "escalated", 4, 4, 3)
    status.pending_escalation = Escalation(
        f"{task_id}-1", task_id, "budget_exhausted", "no retry left (3 allowed)", 4, 4
    )
    return status


def test_the_final_lines_of_an_escalated_task_name_extend_budget() -> None:
    console = Console(record=True, width=200)
    render_final(console, _escalated("t-7"))
    text = console.export_text()
    assert "semspec escalations resolve t-7 --action extend-budget --extra-retries N" in text


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
