"""Names of the Temporal workflows, their signals, updates and queries, and their workflow ids.

These are an API: recorded histories and running tasks carry them, and the CLI, the clients, the
signal bridge and the plan workflow address tasks by them. Never rename one after release.
"""

from __future__ import annotations

from typing import Final

TASK_WORKFLOW: Final = "TaskWorkflow"
PLAN_WORKFLOW: Final = "PlanWorkflow"
LAND_WORKFLOW: Final = "LandWorkflow"
"""One land of an approved task (``workflow/land``); its id is ``land-<task id>``."""

QUERY_STATUS: Final = "status"
"""Both workflows answer it: ``TaskStatus`` for a task, ``PlanStatus`` for a plan."""
UPDATE_RESOLVE: Final = "resolve_escalation"

SIGNAL_PAUSE: Final = "pause"
SIGNAL_HALT: Final = "halt"
SIGNAL_FLAG: Final = "flag"
TASK_SIGNALS: Final = (SIGNAL_PAUSE, SIGNAL_HALT, SIGNAL_FLAG)
"""The risk monitor's actions a task workflow takes as signals."""

_TASK_PREFIX: Final = "task-"
_PLAN_PREFIX: Final = "plan-"


def task_workflow_id(task_id: str) -> str:
    """Temporal workflow id of a task (also of a plan's task: plans keep their tasks' ids)."""
    return f"{_TASK_PREFIX}{task_id}"


def task_id_of(workflow_id: str) -> str:
    """The task id a task workflow id names."""
    return workflow_id.removeprefix(_TASK_PREFIX)


def subtask_id(task_id: str, part: int) -> str:
    """Task id of the ``part``-th subtask a task too large for its context was split into."""
    return f"{task_id}-part{part}"


def plan_workflow_id(plan_id: str) -> str:
    """Temporal workflow id of a plan."""
    return f"{_PLAN_PREFIX}{plan_id}"
