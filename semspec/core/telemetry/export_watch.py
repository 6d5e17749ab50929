"""OTLP exporters that report an outage once, with what it dropped (docs/telemetry.md).

The SDK's exporters and processors log each failed export on their own loggers, a raw line per
batch for as long as the receiver is down (a metrics reader every interval, for ever). Here
those loggers keep their last words for us instead of printing them, and each signal's exporter
is wrapped: the first failure is one structured warning naming the receiver and the SDK's
reason; the end of the outage (an export that succeeds again, or the process's exit) is a
second one with the count of spans or metric exports dropped meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from semspec.core.logging import get_logger

SDK_LOGGERS = (
    "opentelemetry.exporter.otlp",
    "opentelemetry.sdk._shared_internal",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.sdk.metrics._internal.export",
)
"""Where the SDK logs its export failures (checked against opentelemetry-sdk 1.45)."""


class _LastWords(logging.Handler):
    """Keeps the SDK's latest warning as the reason of the next failed export."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()[:300]
        except Exception:  # a malformed record must not break an export
            self.last = str(record.msg)[:300]

    def take(self) -> str | None:
        said, self.last = self.last, None
        return said


_last_words = _LastWords()


def quiet_sdk_loggers() -> None:
    """Send the SDK's export loggers to the outage reports instead of the process's log."""
    for name in SDK_LOGGERS:
        sdk = logging.getLogger(name)
        if _last_words not in sdk.handlers:
            sdk.addHandler(_last_words)
        sdk.propagate = False


class Outage:
    """Whether one signal's receiver is down, and what was dropped since it went down."""

    def __init__(self, signal: str, receiver: str, unit: str) -> None:
        self.signal = signal
        self.receiver = receiver
        self.unit = unit
        self.dropped = 0
        self._reported = 0
        self._down = False
        self._lock = threading.Lock()
        self._log = get_logger("telemetry")

    def failed(self, count: int, error: str | None) -> None:
        """An export of ``count`` items failed; the first failure of an outage is reported."""
        reason = _last_words.take() or error or "no answer"
        with self._lock:
            self.dropped += count
            if self._down:
                return
            self._down = True
            self._reported = self.dropped
        self._log.warning(
            "telemetry export failing; dropping until the receiver answers",
            signal=self.signal,
            receiver=self.receiver,
            reason=reason,
            dropped=count,
            unit=self.unit,
        )

    def succeeded(self) -> None:
        """An export went through: an outage, if any, is over."""
        self._end("telemetry export recovered")

    def closed(self) -> None:
        """The process exits: say what an unfinished outage dropped."""
        self._end("telemetry export still failing at exit")

    def _end(self, what: str) -> None:
        with self._lock:
            if not self._down:
                return
            dropped, more = self.dropped, self.dropped > self._reported
            self._down, self.dropped, self._reported = False, 0, 0
        if more:
            self._log.warning(
                what, signal=self.signal, receiver=self.receiver, dropped=dropped, unit=self.unit
            )


class WatchedSpanExporter(SpanExporter):
    """A span exporter whose failures are outages (``Outage``) instead of SDK log lines."""

    def __init__(self, inner: SpanExporter, outage: Outage) -> None:
        self._inner = inner
        self.outage = outage

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception as exc:
            self.outage.failed(len(spans), type(exc).__name__)
            return SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self.outage.succeeded()
        else:
            self.outage.failed(len(spans), None)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()
        self.outage.closed()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class WatchedMetricExporter(MetricExporter):
    """A metric exporter whose failures are outages; it counts dropped exports."""

    def __init__(self, inner: MetricExporter, outage: Outage) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner = inner
        self.outage = outage

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        try:
            result = self._inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:
            self.outage.failed(1, type(exc).__name__)
            return MetricExportResult.FAILURE
        if result == MetricExportResult.SUCCESS:
            self.outage.succeeded()
        else:
            self.outage.failed(1, None)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._inner.shutdown(timeout_millis=timeout_millis, **kwargs)
        self.outage.closed()
