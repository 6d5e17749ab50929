"""A task's trace as a real tracing backend shows it: Arize Phoenix, installed from PyPI, fed
over OTLP/HTTP by the worker's exporting telemetry (not an in-memory exporter).

The task is the sample one, played by the fake OpenAI-compatible server priced in the
registry; its developer's first call is refused with a 429 that the retried activity gets
past. Phoenix must list the trace under the task's name, with the task's length as the trace's
latency, no error, and the model calls' dollars in the attributes it reads them from.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from temporalio.client import Client

from semspec.core import telemetry
from semspec.core.config.models import TelemetryConfig
from semspec.core.telemetry.otel import exporting
from semspec.workflow.worker import build_worker
from tests.agents.test_llm_task_e2e_retries import run_task
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.llm_task import approve_reply, developer_replies, sample_repo
from tests.support.owner import OWNER
from tests.support.phoenix import Phoenix, running_phoenix

PRICE = {"input_per_1m": 1_000.0, "output_per_1m": 2_000.0, "source": "test", "as_of": "2026-11-27"}
"""Dollars per million tokens: each fake call (10 in, 5 out) costs $0.02."""
INGEST_WAIT_S = 60.0


def priced(repo: Path) -> Path:
    """The sample repository with a price for the fake model in its registry."""
    registry_file = repo / ".semspec" / "models.yaml"
    registry = yaml.safe_load(registry_file.read_text(encoding="utf-8"))
    registry["models"]["fake-model"]["cost"] = PRICE
    registry_file.write_text(yaml.safe_dump(registry), encoding="utf-8")
    return repo


def trace_in(phoenix: Phoenix, task_id: str) -> list[dict[str, Any]]:
    """The spans of the task's trace, once Phoenix has ingested its ``task run`` span."""
    deadline = time.monotonic() + INGEST_WAIT_S
    while True:
        spans = phoenix.spans()
        runs = [
            s
            for s in spans
            if s["name"] == "task run" and s["attributes"]["semspec"]["task"]["id"] == task_id
        ]
        if runs:
            trace_id = runs[0]["trace"]["traceId"]
            return [s for s in spans if s["trace"]["traceId"] == trace_id]
        assert time.monotonic() < deadline, f"Phoenix never showed the task: {spans}"
        time.sleep(0.5)


async def test_phoenix_lists_a_recovered_task_by_name_with_its_length_no_error_and_its_cost(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    task_id = f"phoenix-{uuid.uuid4().hex[:8]}"
    (tmp_path / "phoenix").mkdir()
    with running_phoenix(tmp_path / "phoenix") as phoenix:
        settings = TelemetryConfig(enabled=True, endpoint=phoenix.url, metrics={"enabled": False})
        traces = exporting(settings, "worker")
        refused = FakeReply(status=429, error_message="rate limit reached", retry_after=0.1)
        developer = [refused, *developer_replies()]
        with telemetry.installed(traces):
            async with build_worker(temporal_client, task_queue, None, owner=OWNER):
                with FakeLLMServer.for_roles(
                    developer=developer, reviewer=[approve_reply()]
                ) as llm:
                    repo = priced(sample_repo(tmp_path / "repo", llm.base_url))
                    result = await run_task(temporal_client, task_queue, repo, task_id)
        traces.shutdown()
        trace = trace_in(phoenix, task_id)

    assert result.outcome == "approved"
    (root,) = [s for s in trace if s["parentId"] is None]
    assert root["name"] == f"task {task_id}: Add a sub function"
    (run,) = [s for s in trace if s["name"] == "task run"]
    assert run["attributes"]["semspec"]["task"]["outcome"] == "approved"
    # The trace lasts as long as the task, not as long as its submission.
    assert root["latencyMs"] < run["latencyMs"] <= root["trace"]["latencyMs"]
    # A refused call the retry got past makes no span of the trace an error.
    assert [s["name"] for s in trace if s["statusCode"] == "ERROR"] == []
    assert run["statusCode"] == "OK"
    # The model calls' dollars as Phoenix stored them, under OpenInference's names (Phoenix
    # 20.26 prices calls itself, from its own table of models, so its cost summary of a
    # model it does not know stays $0: docs/telemetry.md).
    chats = [s for s in trace if s["name"].startswith("chat ")]
    assert len(chats) == 7  # the refused call, five developer calls, the reviewer's
    refused_calls = [s for s in chats if "error" in s["attributes"]]
    assert [s["attributes"]["error"]["type"] for s in refused_calls] == ["rate_limited"]
    costs = [s["attributes"]["llm"]["cost"] for s in chats if s not in refused_calls]
    assert [round(c["total"], 9) for c in costs] == [0.02] * 6
    assert all(round(c["prompt"] + c["completion"], 9) == 0.02 for c in costs)
