"""Whether a task's workflow is still open, asked of Temporal (the monitor's reconcile step)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from semspec.core.logging import get_logger
from semspec.vocabulary.workflow_names import task_workflow_id


def log() -> Any:
    """The logger, bound when used: a module-level one would keep the import-time setup."""
    return get_logger("risk-monitor")


class TemporalLiveness:
    """Answers ``is_open`` by describing ``task-<id>``; connects on first use, never raises."""

    def __init__(self, connect: Callable[[], Awaitable[Client]]) -> None:
        self._connect = connect
        self._client: Client | None = None

    async def is_open(self, task_id: str) -> bool | None:
        """True while the workflow runs; False when it closed or never existed; None when
        Temporal gave no answer (the task stays active until it does)."""
        try:
            if self._client is None:
                self._client = await self._connect()
            description = await self._client.get_workflow_handle(
                task_workflow_id(task_id)
            ).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return False
            log().warning("workflow state unknown", task_id=task_id, error=exc.message)
            return None
        except Exception as exc:  # the monitor keeps running whatever Temporal does
            log().warning("workflow state unknown", task_id=task_id, error=str(exc))
            self._client = None
            return None
        return description.status == WorkflowExecutionStatus.RUNNING
