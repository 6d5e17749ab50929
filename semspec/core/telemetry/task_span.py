"""What the span of a whole task says: how it ended, what it took, what happened on the way.

Built from the task's status (the workflow's ``status`` query: read, never changed) by plain
functions, so the workflow interceptor that records the span (``tracing``) stays small. The
status is read by attribute name, as this floor cannot import the workflow's types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semspec.core.telemetry.spans import CONVERSATION, COST_USD, TASK_ID
from semspec.core.telemetry.types import AttributeValue

TASK_SPAN = "task run"
OUTCOME = "semspec.task.outcome"
REASON = "semspec.task.reason"
TITLE = "semspec.task.title"
ITERATIONS = "semspec.task.iterations"
RETRIES = "semspec.task.retries"
ESCALATIONS = "semspec.task.escalations"
FLAGS = "semspec.task.flags"
COMMIT = "semspec.task.commit_id"
OPENINFERENCE_KIND = "openinference.span.kind"
INPUT_TOKENS = "semspec.task.input_tokens"
OUTPUT_TOKENS = "semspec.task.output_tokens"

FAILED_OUTCOMES = frozenset({"failed"})
"""Outcomes that make the task's span, and so its trace, an error. A task a human aborted, a
cancelled one and one refused at its budget check ended as they were told to."""
EVENT_KINDS = {
    "escalation": "escalation",
    "signal": "risk signal",
    "retry": "retry",
    "refused": "refused input",
    "cancelled": "step cancelled",
    "checkpoint": "checkpoint",
}
"""Task log kinds that become events of the task's span, and the events' names."""


def task_span_name(task_id: str, title: str) -> str:
    """``task <id>: <title>``: what a backend's list of traces shows for a task."""
    short = " ".join(title.split())
    if len(short) > 80:
        short = short[:79] + "…"
    return f"task {task_id}: {short}" if short else f"task {task_id}"


@dataclass
class SpanEvent:
    """One event of the task's span, at a workflow time."""

    name: str
    time_ns: int
    attributes: dict[str, AttributeValue]


@dataclass
class TaskLogStamps:
    """The task log's entries stamped with the workflow time they were first seen at."""

    seen: int = 0
    events: list[SpanEvent] = field(default_factory=list)

    def stamp(self, status: Any, time_ns: int) -> None:
        """Turn the entries added to ``status.log`` since the last call into events."""
        log = getattr(status, "log", None) or []
        for entry in log[self.seen :]:
            name = EVENT_KINDS.get(str(getattr(entry, "kind", "")))
            if name is not None:
                attributes: dict[str, AttributeValue] = {
                    "message": str(getattr(entry, "message", ""))[:500],
                    "semspec.iteration": int(getattr(entry, "iteration", 0)),
                }
                self.events.append(SpanEvent(name, time_ns, attributes))
        self.seen = max(self.seen, len(log))


def task_attributes(status: Any, outcome: str, reason: str | None) -> dict[str, AttributeValue]:
    """The attributes of a finished task's span, from its final status."""
    task_id = str(getattr(status, "task_id", ""))
    log = list(getattr(status, "log", None) or [])
    attributes: dict[str, AttributeValue] = {
        TASK_ID: task_id,
        CONVERSATION: task_id,
        TITLE: str(getattr(status, "title", "")),
        OUTCOME: outcome,
        ITERATIONS: int(getattr(status, "iteration", 0)),
        RETRIES: int(getattr(status, "retries", 0)),
        ESCALATIONS: sum(1 for e in log if getattr(e, "kind", "") == "escalation"),
        FLAGS: len(getattr(status, "flags", None) or []),
        OPENINFERENCE_KIND: "AGENT",
    }
    if reason:
        attributes[REASON] = reason[:500]
    commit = getattr(status, "commit_id", None)
    if commit:
        attributes[COMMIT] = str(commit)
    usage = getattr(status, "usage", None)
    if usage is not None:
        # Totals under semspec's own names: a backend that adds up ``llm.cost.*`` and token
        # counts over a trace reads them from the model calls' spans, and would count twice.
        attributes[INPUT_TOKENS] = int(getattr(usage, "input_tokens", 0))
        attributes[OUTPUT_TOKENS] = int(getattr(usage, "output_tokens", 0))
        # An unpriced model's dollars are unknown, not zero: no cost rather than a false $0.
        if not getattr(usage, "unpriced_models", None):
            attributes[COST_USD] = float(getattr(usage, "cost_usd", 0.0))
    return attributes
