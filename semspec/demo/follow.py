"""Watch one running task through its status query and report each new step as it happens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from temporalio.client import Client, WorkflowQueryFailedError

from semspec.client.task_client import task_status
from semspec.core.errors import SemspecError
from semspec.workflow.task.messages import Escalation, LogEntry, TaskStatus

POLL_S = 0.25
QUERY_FAILURE_GRACE_S = 20.0


@dataclass
class TaskFollower:
    """Polls a task's status; calls ``on_status`` with every status it reads, then
    ``on_entry`` for each new log line and ``on_phase`` for each phase it sees, and stops when
    the task ends or raises an escalation not yet answered."""

    client: Client
    task_id: str
    on_entry: Callable[[LogEntry], None]
    on_phase: Callable[[str], None]
    on_status: Callable[[TaskStatus], None] = lambda _status: None
    shown: int = 0
    phase: str = ""
    answered: set[str] = field(default_factory=set)
    _failing_since: float = 0.0

    async def until_settled(self, timeout_s: float) -> TaskStatus:
        """The status once the task is finished or waits on a new escalation.

        Raises a ``SemspecError`` naming the task when that takes longer than ``timeout_s``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            status = await self._poll()
            if status is not None:
                if status.outcome:
                    return status
                pending = status.pending_escalation
                if pending is not None and pending.escalation_id not in self.answered:
                    return status
            if loop.time() > deadline:
                raise SemspecError(
                    f"task {self.task_id} did not finish or escalate within {timeout_s:.0f}s",
                    hint=f"see `semspec task status {self.task_id}`, or pass a larger --timeout",
                )
            await asyncio.sleep(POLL_S)

    def mark_answered(self, escalation: Escalation) -> None:
        """Stop treating ``escalation`` as a reason to return (it has been resolved)."""
        self.answered.add(escalation.escalation_id)

    async def _poll(self) -> TaskStatus | None:
        loop = asyncio.get_running_loop()
        try:
            status = await task_status(self.client, self.task_id)
        except WorkflowQueryFailedError as err:
            # Normal for a moment while the workflow sets up its status; for long, a broken
            # workflow task (see the worker's log), which waiting will not fix.
            self._failing_since = self._failing_since or loop.time()
            if loop.time() - self._failing_since > QUERY_FAILURE_GRACE_S:
                raise SemspecError(
                    f"task {self.task_id} does not answer its status query: {err}",
                    hint="see the worker's log under .semspec/run/logs/ of the stack's repository",
                ) from None
            return None
        self._failing_since = 0.0
        self.on_status(status)
        for entry in status.log[self.shown :]:
            self.on_entry(entry)
        self.shown = len(status.log)
        shown_phase = status.outcome or status.phase
        if shown_phase != self.phase:
            self.phase = shown_phase
            self.on_phase(shown_phase)
        return status
