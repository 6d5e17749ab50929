"""The board's rows: each task's latest workflow run and its status, as ``semspec task list``
and ``semspec task status`` read them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio.client import WorkflowQueryFailedError

from semspec.client.task_client import state_name, task_status
from semspec.client.task_render import retries_fraction
from semspec.core.errors import SemspecError
from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_id_of
from semspec.workflow.task.dollars import spent_text

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.workflow.task.messages import TaskStatus

BOARD_COLUMNS = ("running", "escalated", "halted", "approved", "failed")
"""The board's sections, in the order shown."""
LIMIT = 500
"""Tasks the board shows, newest first."""
QUERIES_AT_ONCE = 8
LIST_TIMEOUT = timedelta(seconds=3)
"""How long Temporal may take to list the tasks before the board says it does not answer."""
STATUS_TIMEOUT_S = 3.0
"""How long one task's status may take before its row shows what Temporal alone knows."""


@dataclass(frozen=True)
class BoardRow:
    """One task on the board."""

    task_id: str
    column: str
    """One of ``BOARD_COLUMNS``."""
    state: str
    """The workflow's state, as ``semspec task list`` shows it."""
    phase: str
    title: str
    plan_id: str
    iteration: int
    retries: str
    pressure: str
    utilization: float | None
    cost_usd: float
    started: str
    cost: str = ""
    """What was spent as the task page shows it (``spent_text``); empty when nothing is known."""
    reason: str = ""
    """Why it ended, when it ended otherwise than approved (a refusal's reason, an abort's)."""
    closed: str = ""
    """When its workflow closed (ISO 8601); empty while it runs."""


async def board_rows(
    client: Client, closed: dict[str, BoardRow] | None = None, limit: int = LIMIT
) -> list[BoardRow]:
    """Every task's row, newest first; statuses are asked for a few at a time. ``closed``
    keeps the rows of closed workflow runs (by run id) between calls: they never change, and
    reading a closed run's result is most of the time a board takes."""
    closed = {} if closed is None else closed
    query = f"WorkflowType = '{TASK_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'"
    found: dict[str, tuple[str, str, str, str]] = {}
    async for wf in client.list_workflows(query, limit=limit, rpc_timeout=LIST_TIMEOUT):
        if wf.id not in found:
            started = wf.start_time.isoformat(timespec="seconds") if wf.start_time else ""
            closed_at = wf.close_time.isoformat(timespec="seconds") if wf.close_time else ""
            found[wf.id] = (wf.run_id, state_name(wf.status), started, closed_at)
    gate = asyncio.Semaphore(QUERIES_AT_ONCE)

    async def row(
        workflow_id: str, run_id: str, wf_state: str, started: str, closed_at: str
    ) -> BoardRow:
        if run_id in closed:
            return closed[run_id]
        task_id = task_id_of(workflow_id)
        async with gate:
            status = await _status(client, task_id)
        made = replace(board_row(task_id, wf_state, started, status), closed=closed_at)
        if wf_state != "running" and status is not None:
            closed[run_id] = made
        return made

    return list(await asyncio.gather(*(row(wid, *seen) for wid, seen in found.items())))


async def _status(client: Client, task_id: str) -> TaskStatus | None:
    try:
        asking = task_status(client, task_id, STATUS_TIMEOUT_S)
        return await asyncio.wait_for(asking, STATUS_TIMEOUT_S)
    except (SemspecError, TimeoutError, WorkflowQueryFailedError):
        return None


def board_row(task_id: str, wf_state: str, started: str, status: TaskStatus | None) -> BoardRow:
    """A task's row from its workflow state and (when it answered) its status."""
    if status is None:
        column = "running" if wf_state == "running" else "failed"
        return BoardRow(task_id, column, wf_state, "unknown", "", "", 0, "", "", None, 0.0, started)
    context = status.context
    return BoardRow(
        task_id=task_id,
        column=column_of(wf_state, status),
        state=wf_state,
        phase=status.outcome if wf_state != "running" and status.outcome else status.phase,
        title=status.title,
        plan_id=status.plan_id or "",
        iteration=status.iteration,
        retries=retries_fraction(status.retries, status.max_retries),
        pressure=context.pressure if context else "",
        utilization=context.utilization if context else None,
        cost_usd=status.usage.cost_usd,
        started=started,
        cost=spent_text(status.usage.cost_usd, status.usage.unpriced_models),
        reason=(status.reason or "") if status.outcome and status.outcome != "approved" else "",
    )


def column_of(wf_state: str, status: TaskStatus) -> str:
    """The board section of a task."""
    if wf_state == "running":
        if status.halted:
            return "halted"
        if status.phase == "escalated" or status.pending_escalation is not None:
            return "escalated"
        return "running"
    if wf_state == "completed" and status.outcome == "approved":
        return "approved"
    if status.halted or status.outcome == "halted":
        return "halted"
    return "failed"
