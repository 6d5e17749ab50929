"""What the rest of semspec sees of telemetry: a ``Telemetry`` and the monitor's metrics.

Both base classes record nothing, which is what telemetry does while it is off; the
OpenTelemetry versions (``semspec.core.telemetry.otel``) override every method. Nothing here
imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from temporalio.client import Client

AttributeValue = str | int | float | bool
Attributes = Mapping[str, AttributeValue]
SpanKind = Literal["internal", "client", "server"]


class MonitorMetrics:
    """The risk monitor's instruments (docs/telemetry.md names each); these count nothing."""

    def event(self, kind: str) -> None:
        """One loop event evaluated (a redelivered or duplicate one is not counted)."""

    def signal(self, level: str, reason: str) -> None:
        """One user signal published."""

    def cost(self, usd: float, model: str | None) -> None:
        """Dollars a model call cost."""

    def task_moved(self, old: str | None, new: str | None) -> None:
        """A task left state ``old`` (None: newly seen) for ``new`` (None: no longer counted)."""

    def lag(self, pending: int) -> None:
        """Loop events stored but not yet delivered to the monitor."""


class Telemetry:
    """Tracing and metrics of one process; this one records nothing."""

    enabled = False
    """Whether anything is recorded (callers skip building attributes when not)."""

    @contextmanager
    def span(
        self, name: str, attributes: Attributes, kind: SpanKind = "internal"
    ) -> Iterator[None]:
        """A span around the block, the current span inside it (so Temporal's spans nest)."""
        yield

    def record_span(
        self,
        name: str,
        attributes: Attributes,
        duration_ms: float,
        *,
        kind: SpanKind = "internal",
        error: str | None = None,
    ) -> None:
        """A span that ended now after ``duration_ms``, a child of the current span;
        ``error`` (a short description) marks it failed."""

    def worker_interceptors(self, client: Client) -> list[Any]:
        """Temporal interceptors a worker on ``client`` needs to trace (none when the client
        traces already, as its interceptors reach the worker)."""
        return []

    def traced_client(self, client: Client) -> Client:
        """``client`` with Temporal's tracing interceptor, so what it starts joins the trace."""
        return client

    def monitor_metrics(self) -> MonitorMetrics:
        """The risk monitor's instruments."""
        return MonitorMetrics()

    def shutdown(self) -> None:
        """Export what is buffered and stop (also done at process exit)."""
