"""The risk monitor's metrics, counted from what the active monitor evaluates and publishes.

Events are counted once each: the processor reports an event only when it is new to the task's
state, so a redelivered or duplicate event changes no count. Tasks are counted by the state
their latest event or signal puts them in; the finished ones by their outcome, since this monitor
started consuming. The consumer's lag is asked of JetStream on a timer (the runner's), so a
monitor that is stuck or down shows its backlog growing.
"""

from __future__ import annotations

from nats.js import JetStreamContext

from semspec.core.telemetry.types import MonitorMetrics
from semspec.vocabulary.event_payloads import EscalationRaised, FinishedPayload, StepPayload
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.streams import CONSUMER
from semspec.vocabulary.subjects import MONITOR_STREAM

RUNNING = "running"
ESCALATED = "escalated"
_SIGNALLED = {"pause": "paused", "halt": "halted"}
"""The signals that stop a task, and the state they leave it in until its next iteration."""


class MonitorMeter:
    """Turns evaluated events and published signals into the monitor's metrics."""

    def __init__(self, metrics: MonitorMetrics) -> None:
        self._metrics = metrics
        self._states: dict[str, str] = {}
        """The state of each unfinished task seen (finished ones are forgotten)."""

    def event(self, event: MonitorEvent) -> None:
        """Count a newly evaluated event and what it says of its task."""
        self._metrics.event(event.kind)
        data = event.data
        if isinstance(data, StepPayload) and data.cost_usd:
            self._metrics.cost(data.cost_usd, data.model)
        if event.kind == "iteration":
            self._move(event.task_id, RUNNING)
        elif event.kind == "escalation":
            self._move(event.task_id, ESCALATED if isinstance(data, EscalationRaised) else RUNNING)
        elif isinstance(data, FinishedPayload):
            self._move(event.task_id, data.outcome)
            self._states.pop(event.task_id, None)

    def signal(self, signal: UserSignal) -> None:
        """Count a published signal; a pause or halt stops its task."""
        self._metrics.signal(signal.level, signal.reason)
        stopped = _SIGNALLED.get(signal.level)
        if stopped is not None and signal.task_id in self._states:
            self._move(signal.task_id, stopped)

    async def measure_lag(self, js: JetStreamContext, consumer: str = CONSUMER) -> int:
        """Ask JetStream how many loop events wait for the monitor's consumer; record it."""
        info = await js.consumer_info(MONITOR_STREAM, consumer)
        pending = info.num_pending or 0
        self._metrics.lag(pending)
        return pending

    def _move(self, task_id: str, state: str) -> None:
        old = self._states.get(task_id)
        if old != state:
            self._metrics.task_moved(old, state)
            self._states[task_id] = state
