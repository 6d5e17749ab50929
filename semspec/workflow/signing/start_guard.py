"""The worker's own guard: no activity runs for a workflow run the owner did not sign.

Workflow code checks its start signature (``owner_check.check_start``), but Temporal lets any
client that reaches it schedule our activities on our task queue from a workflow of its own, or
start our workflows in ways the workflow code might mis-judge. So the worker checks again where
the work happens (ADR 0004, issue 25): before any activity runs, it reads the first event of
the calling run's history from Temporal (the input the run really started with, not what the
activity was handed) and requires that the run

- is a ``TaskWorkflow`` or ``PlanWorkflow`` of this worker's namespace and task queue, and
- started with an input that carries the owner's start signature over its workflow id and its
  whole input, verified against the one key this worker serves.

Every run of ours is signed: the client signs what it starts, and the worker signs the children
and continued runs its workflows start (``task.loop.child_start`` asks, ``child_signer`` signs).
The verdict is kept per run (a bounded map), so a run costs one history read per worker
process however many activities it calls; a refused run is logged once and counted in ``refused``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import structlog
from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from semspec.core.owner_key import verify
from semspec.vocabulary.workflow_names import PLAN_WORKFLOW, TASK_WORKFLOW
from semspec.workflow.land.messages import LAND_START, LAND_WORKFLOW, LandInput
from semspec.workflow.plan.messages import PlanInput
from semspec.workflow.task.messages import PLAN_START, TASK_START, TaskInput, start_fields

logger = structlog.get_logger()

UNVERIFIED_RUN = "UnverifiedRun"
"""Error type of an activity refused because its workflow run's start does not verify."""
KEPT_VERDICTS = 4096
"""Runs whose verdict the guard keeps; older ones are read again when they call once more."""

_PURPOSES: dict[str, tuple[str, type[Any]]] = {
    TASK_WORKFLOW: (TASK_START, TaskInput),
    PLAN_WORKFLOW: (PLAN_START, PlanInput),
    LAND_WORKFLOW: (LAND_START, LandInput),
}


@dataclass
class Verdict:
    """What the guard found about one run: its verified input, or why it was refused."""

    start: TaskInput | PlanInput | LandInput | None
    refusal: str = ""
    logged: bool = False
    """The refusal is in the worker's log: a flood from one run is counted, not logged."""


class StartGuard:
    """Verifies the run behind each activity against the owner key this worker serves."""

    def __init__(self, client: Client, task_queue: str, owner_key: str) -> None:
        if not owner_key:
            raise ValueError("a worker needs the public key of the stack's owner")
        self._client = client
        self._task_queue = task_queue
        self._owner_key = owner_key
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self.refused = 0
        """Activities refused since the worker started."""

    async def verified_start(self) -> TaskInput | PlanInput | LandInput:
        """In an activity: the signed input its run started with; raises ``ApplicationError``
        (non-retryable, type ``UnverifiedRun``) when the run's start does not verify."""
        info = activity.info()
        run = f"{info.workflow_id}/{info.workflow_run_id}"
        verdict = self._verdicts.get(run)
        if verdict is None:
            verdict = await self._judge(info)
            self._keep(run, verdict)
        else:
            self._verdicts.move_to_end(run)
        if verdict.start is not None:
            return verdict.start
        self.refused += 1
        if not verdict.logged:
            verdict.logged = True
            logger.warning(
                "activity refused: its workflow run was not signed by the stack's owner",
                activity=info.activity_type,
                workflow_id=info.workflow_id,
                run_id=info.workflow_run_id,
                why=verdict.refusal,
                refused=self.refused,
            )
        raise ApplicationError(
            f"workflow {info.workflow_id} was not started by this stack's owner "
            f"({verdict.refusal}); the worker refuses its {info.activity_type}",
            type=UNVERIFIED_RUN,
            non_retryable=True,
        )

    def _keep(self, run: str, verdict: Verdict) -> None:
        self._verdicts[run] = verdict
        while len(self._verdicts) > KEPT_VERDICTS:
            self._verdicts.popitem(last=False)

    async def _judge(self, info: activity.Info) -> Verdict:
        if info.workflow_namespace != self._client.namespace:
            return Verdict(
                None, f"its workflow is in another namespace ({info.workflow_namespace})"
            )
        kind = _PURPOSES.get(info.workflow_type or "")
        if kind is None or not info.workflow_id or not info.workflow_run_id:
            return Verdict(None, f"its caller is not a task, plan or land ({info.workflow_type})")
        purpose, input_type = kind
        handle = self._client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        try:
            async for event in handle.fetch_history_events(page_size=1):
                first = event
                break
            else:
                return Verdict(None, "its workflow run has no history")
        except RPCError as exc:
            # Temporal unreachable: not the caller's fault, so retryable like any outage.
            raise ApplicationError(f"cannot read the calling run's start: {exc}") from exc
        started = first.workflow_execution_started_event_attributes
        if started.task_queue.name != self._task_queue:
            return Verdict(
                None, f"its workflow runs on another task queue ({started.task_queue.name})"
            )
        if started.workflow_type.name != info.workflow_type:
            return Verdict(None, "its workflow type differs from its history's")
        try:
            [start] = await self._client.data_converter.decode(started.input.payloads, [input_type])
        except Exception as exc:  # any decoding failure is a refusal, not a crash
            return Verdict(None, f"its start input is not a {input_type.__name__} ({exc})")
        fields = start_fields(info.workflow_id, start)
        if start.owner_key != self._owner_key:
            return Verdict(None, "its start names another owner key")
        if not verify(self._owner_key, start.start_signature, purpose, fields):
            how = "wrong" if start.start_signature else "missing"
            return Verdict(None, f"its start signature is {how}")
        return Verdict(start)


class StartGuardInterceptor(Interceptor):
    """Runs ``StartGuard`` before every activity of the worker."""

    def __init__(self, guard: StartGuard) -> None:
        self._guard = guard

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Guarded(next, self._guard)


class _Guarded(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, guard: StartGuard) -> None:
        super().__init__(next)
        self._guard = guard

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        await self._guard.verified_start()
        return await self.next.execute_activity(input)
