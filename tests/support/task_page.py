"""The console's task page rendered without a server, from a task's status, as its handler
(``semspec/console/task_page.py``) fills the template when the task has no workspace."""

from __future__ import annotations

from typing import Any

from semspec.console.page_status import PageStatus
from semspec.console.state import template_environment
from semspec.console.task_diff import TaskDiff
from semspec.console.task_page import GATE_TAIL_LINES
from semspec.console.task_timeline import timeline
from semspec.workflow.task.messages import TaskStatus


def render_task(status: TaskStatus, **extra: Any) -> str:
    """``task.html`` of ``status``; ``extra`` adds or replaces template variables (for example
    ``iteration_diffs``)."""
    context: dict[str, Any] = {
        "request": None,
        "url_for": None,
        "active": "",
        "page_status": PageStatus(),
        "task_id": status.task_id,
        "status": status,
        "problem": "",
        "timeline": timeline(status),
        "diff": TaskDiff("", "", [], 0, 0, False, "the task has no workspace yet"),
        "diff_files": [],
        "gate_tail_lines": GATE_TAIL_LINES,
        "cost": "",
        "budget": "",
    }
    return template_environment().get_template("task.html").render(context | extra)
