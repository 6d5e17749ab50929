"""Temporal's tracing interceptor, as semspec uses it.

It makes spans also for workflows started untraced (so a plan's tasks are each one trace), but
not for a status query that carries no trace: the CLI, the console and the monitor ask for a
task's status often, and each such query would otherwise be a trace of one span.
"""

from __future__ import annotations

from typing import Any

from temporalio.contrib.opentelemetry import TracingInterceptor, TracingWorkflowInboundInterceptor
from temporalio.worker import (
    HandleQueryInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)


class _UntracedQueries(TracingWorkflowInboundInterceptor):
    """Workflow tracing that leaves queries without a trace of their own untraced."""

    async def handle_query(self, input: HandleQueryInput) -> Any:
        """Answer the query; a span only when the query joins a trace."""
        if self.header_key in input.headers:
            return await super().handle_query(input)
        return await WorkflowInboundInterceptor.handle_query(self, input)


class SemspecTracing(TracingInterceptor):
    """Client and worker tracing with spans for untraced workflows but not untraced queries."""

    def __init__(self, tracer: Any) -> None:
        super().__init__(tracer, always_create_workflow_spans=True)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[TracingWorkflowInboundInterceptor]:
        """The workflow side: Temporal's, without spans for untraced queries."""
        super().workflow_interceptor_class(input)
        return _UntracedQueries
