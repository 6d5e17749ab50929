"""The risk monitor's instruments on an OpenTelemetry meter (names in docs/telemetry.md)."""

from __future__ import annotations

from opentelemetry.metrics import Meter

from semspec.core.telemetry.types import MonitorMetrics

EVENTS = "semspec.monitor.events"
SIGNALS = "semspec.monitor.signals"
COST = "semspec.monitor.cost"
TASKS = "semspec.monitor.tasks"
LAG = "semspec.monitor.consumer.lag"


class OtelMonitorMetrics(MonitorMetrics):
    """Counters, an up-down counter of tasks per state and a gauge of the consumer's lag."""

    def __init__(self, meter: Meter) -> None:
        self._events = meter.create_counter(
            EVENTS, unit="{event}", description="Loop events the monitor evaluated, by kind."
        )
        self._signals = meter.create_counter(
            SIGNALS, unit="{signal}", description="User signals published, by level and reason."
        )
        self._cost = meter.create_counter(
            COST, unit="USD", description="Dollars the agents' model calls cost, by model."
        )
        self._tasks = meter.create_up_down_counter(
            TASKS, unit="{task}", description="Tasks seen by the monitor, by state."
        )
        self._lag = meter.create_gauge(
            LAG, unit="{event}", description="Loop events stored but not yet delivered."
        )

    def event(self, kind: str) -> None:
        """Count one evaluated event."""
        self._events.add(1, {"kind": kind})

    def signal(self, level: str, reason: str) -> None:
        """Count one published signal."""
        self._signals.add(1, {"level": level, "reason": reason})

    def cost(self, usd: float, model: str | None) -> None:
        """Add the dollars of one model call."""
        self._cost.add(usd, {"gen_ai.request.model": model or ""})

    def task_moved(self, old: str | None, new: str | None) -> None:
        """Move one task between states."""
        if old is not None:
            self._tasks.add(-1, {"state": old})
        if new is not None:
            self._tasks.add(1, {"state": new})

    def lag(self, pending: int) -> None:
        """Set the consumer's lag."""
        self._lag.set(pending)
