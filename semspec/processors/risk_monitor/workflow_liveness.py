"""Whether a task's workflow is still open, asked of Temporal (the monitor's reconcile step)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio.client import Client, WorkflowExecutionStatus

from semspec.core.logging import logger_for
from semspec.processors.risk_monitor.temporal_client import LazyTemporal, NoAnswer
from semspec.vocabulary.workflow_names import task_workflow_id

log = logger_for("risk-monitor")


class TemporalLiveness:
    """Answers ``is_open`` by describing ``task-<id>``; connects on first use, never raises."""

    def __init__(self, connect: Callable[[], Awaitable[Client]]) -> None:
        self._temporal = LazyTemporal(connect)

    async def is_open(self, task_id: str) -> bool | None:
        """True while the workflow runs; False when it closed or never existed; None when
        Temporal gave no answer (the task stays active until it does)."""
        description = await self._temporal.call(
            lambda client: client.get_workflow_handle(task_workflow_id(task_id)).describe()
        )
        if isinstance(description, NoAnswer):
            if description.not_found:
                return False
            log().warning("workflow state unknown", task_id=task_id, error=description.error)
            return None
        return description.status == WorkflowExecutionStatus.RUNNING
