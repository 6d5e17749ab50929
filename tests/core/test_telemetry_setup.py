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
from semspec.core.telemetry.types import MonitorMetrics, Telemetry

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize(
    "endpoint", ["http://host:6006/v1/traces", "https://otel.example/api/", "http://h:1?x=1"]
)
def test_an_endpoint_with_a_path_is_refused_with_the_base_form_in_the_hint(endpoint: str) -> None:
    for config in ({"endpoint": endpoint}, {"traces": {"endpoint": endpoint}}):
        with pytest.raises(ValidationError) as raised:
            TelemetryConfig.model_validate(config)
        (error,) = raised.value.errors()
        assert "without a path" in error["msg"]
        assert error["ctx"]["hint"].startswith("use http")
        assert "/v1/traces and /v1/metrics" in error["ctx"]["hint"]


def test_config_validate_names_the_endpoint_with_a_path_and_hints_the_right_form(
    tmp_path: Path,
) -> None:
    (tmp_path / ".semspec").mkdir()
    (tmp_path / ".semspec" / "config.yaml").write_text(
        "telemetry:\n  enabled: true\n  endpoint: http://127.0.0.1:6006/v1/traces\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "config", "validate"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "config.yaml:3: telemetry.endpoint:" in done.stderr
    assert "hint: use http://127.0.0.1:6006: semspec adds /v1/traces" in done.stderr


def test_traces_and_metrics_each_have_their_own_switch_and_receiver() -> None:
    settings = TelemetryConfig(
        enabled=True,
        endpoint="http://127.0.0.1:6006",
        metrics={"endpoint": "http://127.0.0.1:4318"},
    )
    assert settings.receiver_of("traces") == "http://127.0.0.1:6006"
    assert settings.receiver_of("metrics") == "http://127.0.0.1:4318"

    traces_only = exporting(TelemetryConfig(enabled=True, metrics={"enabled": False}), "monitor")
    try:
        metrics = traces_only.monitor_metrics()
        assert type(metrics) is MonitorMetrics  # counts nothing, sends nothing
        assert traces_only._meters is None
    finally:
        traces_only.shutdown()


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


def test_a_receiver_that_refuses_exports_is_one_warning_per_outage_with_what_it_dropped() -> None:
    # A traces-only backend answers 405 to metrics; here it refuses spans the same way. The
    # SDK's own per-batch lines stay quiet; the outage is said once, then its count at exit.
    done = python(
        """
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Refusing(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        from semspec.core.config.models import TelemetryConfig
        from semspec.core.telemetry.otel import exporting

        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        traces = exporting(TelemetryConfig(enabled=True, endpoint=endpoint), "worker")
        for batch in range(3):
            for n in range(4):
                with traces.span(f"step {n}", {}):
                    pass
            traces._tracers.force_flush()
        traces.shutdown()
        server.shutdown()
        """
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert len(said.splitlines()) == 2, said
    assert said.count("telemetry export failing") == 1
    assert "reason='Failed to export spans batch code: 405" in said  # the SDK's words, once
    assert said.count("telemetry export still failing at exit") == 1
    assert "dropped=12" in said
