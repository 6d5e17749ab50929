"""The ``telemetry:`` section and what each process sets up from it: nothing (and no
OpenTelemetry import) while off, a clear error when on but not installed, exporters to the
configured receiver when on."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)
from pydantic import ValidationError

from semspec.core import telemetry
from semspec.core.config.models import SemspecConfig, TelemetryConfig
from semspec.core.telemetry.monitor_metrics import COST, EVENTS, LAG, SIGNALS, TASKS
from semspec.core.telemetry.otel import OtelTelemetry, exporting
from semspec.core.telemetry.types import Telemetry

ROOT = Path(__file__).resolve().parents[1]


def python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (only PATH from our environment)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_with_telemetry_off_no_process_imports_opentelemetry() -> None:
    done = python(
        """
        import sys
        import semspec.agents.llm_developer, semspec.client.task_client
        import semspec.services.monitor_runner, semspec.workflow.worker
        from semspec.core import telemetry
        from semspec.core.config.models import SemspecConfig
        from semspec.core.telemetry.spans import gate_span

        traces = telemetry.setup(SemspecConfig(), "worker")
        with traces.span("task submit", {}):
            gate_span(
                telemetry.current(), gate="check", required=True, exit_code=0,
                timed_out=False, duration_ms=1.0,
            )
        traces.monitor_metrics().event("step")
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_telemetry_on_without_opentelemetry_installed_says_how_to_install_it() -> None:
    done = python(
        """
        import sys
        sys.modules["opentelemetry.sdk"] = None  # as if the otel extra were not installed
        from semspec.core import telemetry
        from semspec.core.config.models import SemspecConfig
        from semspec.core.errors import ConfigError

        try:
            telemetry.setup(SemspecConfig(telemetry={"enabled": True}), "worker")
        except ConfigError as exc:
            print(exc.field, "|", exc.hint)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "telemetry.enabled | pip install 'semspec[otel]', or set telemetry.enabled to false"
    )


def test_telemetry_on_sets_up_exporting_telemetry_for_the_process() -> None:
    config = SemspecConfig.model_validate(
        {"telemetry": {"enabled": True, "endpoint": "http://127.0.0.1:9"}}
    )
    with telemetry.installed(Telemetry()):
        traces = telemetry.setup(config, "cli")
        try:
            assert isinstance(traces, OtelTelemetry)
            assert telemetry.current() is traces
        finally:
            traces.shutdown()
    assert not telemetry.current().enabled


def test_the_receiver_defaults_to_a_local_collector_on_the_protocols_port() -> None:
    assert TelemetryConfig().receiver == "http://127.0.0.1:4318"
    assert TelemetryConfig(protocol="grpc").receiver == "http://127.0.0.1:4317"
    given = TelemetryConfig(endpoint="https://otel.example:4318")
    assert given.receiver == "https://otel.example:4318"


@pytest.mark.parametrize("endpoint", ["127.0.0.1:4318", "ftp://host:21", "http://"])
def test_an_endpoint_that_is_not_an_http_url_is_refused(endpoint: str) -> None:
    with pytest.raises(ValidationError, match="expected http://host:port"):
        TelemetryConfig(endpoint=endpoint)


def test_export_headers_never_show_in_the_config() -> None:
    config = SemspecConfig.model_validate({"telemetry": {"headers": {"x-api-key": "s3cret-value"}}})
    assert "s3cret-value" not in config.model_dump_json()
    assert "s3cret-value" not in repr(config)
    assert config.telemetry.headers["x-api-key"].get_secret_value() == "s3cret-value"


def test_the_docs_config_example_validates_and_names_every_metric_the_monitor_has() -> None:
    page = (ROOT / "docs" / "telemetry.md").read_text(encoding="utf-8")
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = SemspecConfig.model_validate(yaml.safe_load(example))
    assert config.telemetry.enabled
    documented = set(re.findall(r"^\| `(semspec\.monitor\.[a-z.]+)` \|", page, re.M))
    assert documented == {EVENTS, SIGNALS, COST, TASKS, LAG}


class Collector(TraceServiceServicer):
    """An OTLP/gRPC trace receiver keeping the names of the spans it is sent."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> Any:
        for resource_spans in request.resource_spans:
            for scope in resource_spans.scope_spans:
                self.names += [span.name for span in scope.spans]
        return ExportTraceServiceResponse()


def test_spans_reach_a_grpc_receiver_when_the_protocol_is_grpc() -> None:
    collector = Collector()
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    add_TraceServiceServicer_to_server(collector, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        settings = TelemetryConfig(
            enabled=True, protocol="grpc", endpoint=f"http://127.0.0.1:{port}"
        )
        traces = exporting(settings, "cli")
        with traces.span("task submit", {"semspec.task.id": "t1"}):
            pass
        traces.shutdown()
    finally:
        server.stop(grace=None)
    assert collector.names == ["task submit"]
