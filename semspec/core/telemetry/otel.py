"""Telemetry on the OpenTelemetry SDK: the one module that imports it (``semspec[otel]``).

Spans of a process go through one tracer provider, exported in the background by a batch
processor (the worker's event loop never waits on an export); the monitor's metrics through a
meter provider made on first use. Neither is set as OpenTelemetry's global provider: a test
hands its own in-memory exporter and metric reader to ``OtelTelemetry`` instead.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode

from semspec.core.config.models import TelemetryConfig
from semspec.core.telemetry.export_watch import (
    Outage,
    WatchedMetricExporter,
    WatchedSpanExporter,
    quiet_sdk_loggers,
)
from semspec.core.telemetry.monitor_metrics import OtelMonitorMetrics
from semspec.core.telemetry.types import Attributes, MonitorMetrics, SpanKind, Telemetry

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.core.telemetry.tracing import SemspecTracing

INSTRUMENTATION = "semspec"
EXPORT_TIMEOUT_S = 3.0
"""How long one export may take, retries included: ``task submit`` waits this long at exit
when the receiver does not answer (the worker and the monitor export in the background)."""
_KINDS = {
    "internal": trace.SpanKind.INTERNAL,
    "client": trace.SpanKind.CLIENT,
    "server": trace.SpanKind.SERVER,
}


def resource(service_name: str, component: str) -> Resource:
    """Who sends: the service and which part of semspec (worker, cli, monitor)."""
    return Resource.create({"service.name": service_name, "semspec.component": component})


class OtelTelemetry(Telemetry):
    """Spans and metrics of one process, through its own providers."""

    enabled = True

    def __init__(
        self, tracers: TracerProvider, meters: Callable[[], MeterProvider] | None = None
    ) -> None:
        self._tracers = tracers
        self._tracer = tracers.get_tracer(INSTRUMENTATION)
        # Made on first use: only the monitor has metrics, and a reader exports on a timer.
        self._make_meters = meters
        self._meters: MeterProvider | None = None
        self._metrics: MonitorMetrics | None = None
        self._interceptor: SemspecTracing | None = None

    @classmethod
    def in_memory(
        cls, spans: SpanExporter, metrics: MetricReader | None = None, component: str = "test"
    ) -> OtelTelemetry:
        """Telemetry exporting each span to ``spans`` as it ends and read by ``metrics``."""
        where = resource("semspec", component)
        tracers = TracerProvider(resource=where, shutdown_on_exit=False)
        tracers.add_span_processor(SimpleSpanProcessor(spans))
        if metrics is None:
            return cls(tracers)
        meters = MeterProvider([metrics], resource=where, shutdown_on_exit=False)
        return cls(tracers, lambda: meters)

    @contextmanager
    def span(
        self, name: str, attributes: Attributes, kind: SpanKind = "internal"
    ) -> Iterator[None]:
        """A span around the block, current inside it; an exception marks it failed."""
        with self._tracer.start_as_current_span(name, attributes=attributes, kind=_KINDS[kind]):
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
        """A span that ended now after ``duration_ms``, a child of the current span."""
        end = time.time_ns()
        start = end - int(max(duration_ms, 0.0) * 1_000_000)
        span = self._tracer.start_span(
            name, attributes=attributes, kind=_KINDS[kind], start_time=start
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end)

    def _tracing(self) -> SemspecTracing:
        """The one tracing interceptor of this telemetry (client and worker sides)."""
        if self._interceptor is None:
            from semspec.core.telemetry.tracing import SemspecTracing

            self._interceptor = SemspecTracing(self._tracer)
        return self._interceptor

    def worker_interceptors(self, client: Client) -> list[Any]:
        """The tracing interceptor, unless ``client`` has one (a worker gets the client's)."""
        return [] if _traces(client) else [self._tracing()]

    def traced_client(self, client: Client) -> Client:
        """A client on the same connection whose calls carry the current trace."""
        from temporalio.client import Client

        if _traces(client):
            return client
        config = client.config()
        config["interceptors"] = [*config["interceptors"], self._tracing()]
        return Client(**config)

    def monitor_metrics(self) -> MonitorMetrics:
        """The monitor's instruments on this telemetry's meter provider."""
        if self._metrics is None:
            if self._make_meters is None:
                # Metrics are off (``telemetry.metrics.enabled``): instruments that count nothing.
                self._metrics = MonitorMetrics()
                return self._metrics
            self._meters = self._make_meters()
            self._metrics = OtelMonitorMetrics(self._meters.get_meter(INSTRUMENTATION))
        return self._metrics

    def shutdown(self) -> None:
        """Export what is buffered, then stop both providers."""
        self._tracers.shutdown()
        if self._meters is not None:
            self._meters.shutdown()


def _traces(client: Client) -> bool:
    """Whether ``client`` has Temporal's tracing interceptor already."""
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return any(isinstance(i, TracingInterceptor) for i in client.config()["interceptors"])


def exporting(config: TelemetryConfig, component: str) -> OtelTelemetry:
    """Telemetry exporting over OTLP as ``config`` says; flushed at process exit.

    Traces and metrics each go to their own receiver and can each be off; an exporter's
    failures are reported once per outage (``export_watch``)."""
    quiet_sdk_loggers()
    where = resource(config.service_name, component)
    tracers = TracerProvider(resource=where)
    if config.traces.enabled:
        tracers.add_span_processor(BatchSpanProcessor(_exporter(config, "traces")))
    if not config.metrics.enabled:
        return OtelTelemetry(tracers)

    def meters() -> MeterProvider:
        reader = PeriodicExportingMetricReader(
            _exporter(config, "metrics"), export_interval_millis=config.metrics_interval_s * 1000
        )
        return MeterProvider([reader], resource=where)

    return OtelTelemetry(tracers, meters)


def _exporter(config: TelemetryConfig, signal: Literal["traces", "metrics"]) -> Any:
    """The OTLP exporter of ``signal`` over the configured protocol, watched for outages."""
    receiver = config.receiver_of(signal).rstrip("/")
    headers = {name: value.get_secret_value() for name, value in config.headers.items()}
    grpc = config.protocol == "grpc"
    module = (
        f"opentelemetry.exporter.otlp.proto.{'grpc' if grpc else 'http'}.{signal[:-1]}_exporter"
    )
    name = "OTLPSpanExporter" if signal == "traces" else "OTLPMetricExporter"
    exporter = getattr(importlib.import_module(module), name)
    if grpc:
        inner = exporter(
            endpoint=receiver,
            insecure=receiver.startswith("http://"),
            headers=headers,
            timeout=EXPORT_TIMEOUT_S,
        )
    else:
        inner = exporter(
            endpoint=f"{receiver}/v1/{signal}", headers=headers, timeout=EXPORT_TIMEOUT_S
        )
    if signal == "traces":
        return WatchedSpanExporter(inner, Outage(signal, receiver, "spans"))
    return WatchedMetricExporter(inner, Outage(signal, receiver, "exports"))
