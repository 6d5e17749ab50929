"""Temporal's tracing interceptor, as semspec uses it.

It makes spans also for workflows started untraced (so a plan's tasks are each one trace), but
not for a status query that carries no trace: the CLI, the console and the monitor ask for a
task's status often, and each such query would otherwise be a trace of one span.

It adds the span of the whole task (``task run``, ``task_span``): Temporal's workflow spans
have no duration, as a replayed workflow must not hold a span open. This one is recorded once,
when a run of the task's workflow ends and the worker is not replaying, from that run's start
to its end; its events are the task log's escalations, risk signals and retries, each at the
workflow time it was first seen (when a signal or update was handled or an activity started).
Workflow code stays as it is: the interceptor reads the task's ``status`` query and the clock
of the workflow (``workflow.time_ns``), both deterministic, and hands the span out of the
sandbox through an extern function, as Temporal's own spans are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from temporalio import activity, workflow
from temporalio.contrib.opentelemetry import TracingInterceptor, TracingWorkflowInboundInterceptor
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    StartActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from semspec.core.telemetry.task_span import (
    FAILED_OUTCOMES,
    TASK_SPAN,
    SpanEvent,
    TaskLogStamps,
    task_attributes,
)
from semspec.core.telemetry.types import AttributeValue

TASK_WORKFLOW = "TaskWorkflow"
STATUS_QUERY = "status"
"""The task workflow's status query (an API name, never renamed: STYLE.md)."""
_TASK_SPAN_EXTERN = "__semspec_task_span"


@dataclass(frozen=True)
class TaskSpanParams:
    """A finished run of a task, handed out of the workflow sandbox to be recorded."""

    parent: Mapping[str, Any] | None
    attributes: dict[str, AttributeValue]
    start_ns: int
    end_ns: int
    error: str | None
    events: list[SpanEvent] = field(default_factory=list)


class _StampingOutbound(WorkflowOutboundInterceptor):
    """Stamps the task log's new entries each time the workflow starts an activity."""

    def __init__(self, next: WorkflowOutboundInterceptor, root: _TaskTracing) -> None:
        super().__init__(next)
        self._root = root

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        self._root.stamp()
        return super().start_activity(input)


class _TaskTracing(TracingWorkflowInboundInterceptor):
    """Workflow tracing with the task's own span, and no span for untraced queries."""

    def __init__(self, next: WorkflowInboundInterceptor) -> None:
        super().__init__(next)
        self._stamps = TaskLogStamps()

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_StampingOutbound(outbound, self))

    async def handle_query(self, input: HandleQueryInput) -> Any:
        """Answer the query; a span only when the query joins a trace."""
        if self.header_key in input.headers:
            return await super().handle_query(input)
        return await WorkflowInboundInterceptor.handle_query(self, input)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        await super().handle_signal(input)
        self.stamp()

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        try:
            return await super().handle_update_handler(input)
        finally:
            self.stamp()

    async def execute_workflow(self, input: Any) -> Any:
        if workflow.info().workflow_type != TASK_WORKFLOW:
            return await super().execute_workflow(input)
        try:
            result = await super().execute_workflow(input)
        except workflow.ContinueAsNewError:
            self._record("checkpointed", None)
            raise
        except (asyncio.CancelledError, CancelledError):
            self._record("cancelled", None)
            raise
        except Exception as exc:
            self._record("failed", f"{type(exc).__name__}: {exc}")
            raise
        self._record(str(getattr(result, "outcome", "")), getattr(result, "reason", None))
        return result

    def stamp(self) -> None:
        """Turn the task log's new entries into events of the task's span, stamped now."""
        status = self._status()
        if status is None:
            return
        try:
            self._stamps.stamp(status, workflow.time_ns())
        except Exception:  # telemetry never fails a workflow task
            return

    def _status(self) -> Any:
        """The task's status, or None (another workflow, or no instance yet)."""
        if workflow.info().workflow_type != TASK_WORKFLOW:
            return None
        try:
            handler = workflow.get_query_handler(STATUS_QUERY)
            return handler() if handler is not None else None
        except Exception:  # no instance yet (a signal before the run started)
            return None

    def _record(self, outcome: str, reason: str | None) -> None:
        if workflow.unsafe.is_replaying():
            return
        status = self._status()
        if status is None:
            return
        try:
            end = workflow.time_ns()
            self._stamps.stamp(status, end)
            start = workflow.info().start_time
            failed = outcome in FAILED_OUTCOMES
            params = TaskSpanParams(
                parent=self._load_workflow_context_carrier(),
                attributes=task_attributes(status, outcome, reason),
                start_ns=min(int(start.timestamp() * 1_000_000_000), end),
                end_ns=end,
                error=(reason or outcome) if failed else None,
                events=list(self._stamps.events),
            )
            workflow.extern_functions()[_TASK_SPAN_EXTERN](params)
        except Exception:  # a span lost is better than a task stuck on a failing workflow task
            workflow.logger.warning("task run span not recorded", exc_info=True)


def _final_failure(error: BaseException, info: activity.Info) -> bool:
    """Whether Temporal gives up on the activity after ``error`` (no attempt follows)."""
    if isinstance(error, (asyncio.CancelledError, CancelledError)):
        return False  # a halt or a cancelled task: the task's span says so
    if isinstance(error, ApplicationError) and error.non_retryable:
        return True
    policy = info.retry_policy
    if policy is None:
        return False
    if type(error).__name__ in (policy.non_retryable_error_types or ()):
        return True
    if isinstance(error, ApplicationError) and error.type in (
        policy.non_retryable_error_types or ()
    ):
        return True
    return 0 < policy.maximum_attempts <= info.attempt


class _ActivityTracing(ActivityInboundInterceptor):
    """``RunActivity:<type>`` spans whose error status means the activity failed for good.

    Temporal's own marks every failed attempt an error, so a model call refused once (a 429
    the next attempt got past) made an approved task an error trace. Here a failed attempt
    that Temporal retries keeps the unset status and carries the exception as an event."""

    def __init__(self, next: ActivityInboundInterceptor, root: SemspecTracing) -> None:
        super().__init__(next)
        self._root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        attributes: dict[str, AttributeValue] = {"temporalActivityID": info.activity_id}
        if info.workflow_id:
            attributes["temporalWorkflowID"] = info.workflow_id
        if info.workflow_run_id:
            attributes["temporalRunID"] = info.workflow_run_id
        with self._root.tracer.start_as_current_span(
            f"RunActivity:{info.activity_type}",
            context=self._root._context_from_headers(input.headers),
            attributes=attributes,
            kind=trace.SpanKind.SERVER,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                return await super().execute_activity(input)
            except BaseException as exc:
                span.record_exception(exc)
                if _final_failure(exc, info):
                    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                raise


class SemspecTracing(TracingInterceptor):
    """Client and worker tracing with spans for untraced workflows but not untraced queries,
    and one span for each run of a task."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(tracer, always_create_workflow_spans=True)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Activity spans that are errors only when the activity failed for good."""
        return _ActivityTracing(next, self)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[TracingWorkflowInboundInterceptor]:
        """The workflow side: Temporal's, plus the task's span."""
        super().workflow_interceptor_class(input)
        input.unsafe_extern_functions[_TASK_SPAN_EXTERN] = self._task_span
        return _TaskTracing

    def _task_span(self, params: TaskSpanParams) -> None:
        """Record a task's run, under the span that started its workflow."""
        parent = (
            self.text_map_propagator.extract(dict(params.parent))
            if params.parent
            else otel_context.Context()
        )
        span = self.tracer.start_span(
            TASK_SPAN,
            parent,
            attributes=params.attributes,
            start_time=params.start_ns,
            kind=trace.SpanKind.INTERNAL,
        )
        for event in params.events:
            span.add_event(event.name, event.attributes, timestamp=event.time_ns)
        if params.error is not None:
            span.set_status(Status(StatusCode.ERROR, params.error))
        else:
            span.set_status(Status(StatusCode.OK))
        span.end(end_time=params.end_ns)
