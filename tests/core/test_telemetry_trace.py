"""One connected trace per task: from the submission through the workflow, its activities, every
model and tool call of the LLM agents, and its gates; replaying the workflow adds no span.

Real Temporal dev server, an in-process worker, the fake OpenAI-compatible server playing both
agents; spans are read from the OpenTelemetry SDK's in-memory exporter.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from temporalio.client import Client
from temporalio.worker import Replayer

from semspec.client.plan_client import submit_plan
from semspec.client.task_client import submit
from semspec.core import telemetry
from semspec.core.telemetry.otel import OtelTelemetry
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import SIGNAL_FLAG, task_workflow_id
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.plan.workflows import PlanWorkflow
from semspec.workflow.task.messages import Resolution, TaskResult
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import build_worker
from tests.agents.test_llm_task_e2e_retries import run_task
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.llm_task import approve_reply, developer_replies, sample_repo
from tests.support.owner import OWNER, answer, send
from tests.support.tasks import BROKEN_CALC, GOOD_CALC, task_input, wait_for_phase, write_script
from tests.workflow.test_plan_workflow import APPROVE, approving, plan_of
from tests.workflow.test_task_scope_flag import wait_for_log

TOOLS = ["list_dir", "search", "read", "write_file", "submit"]


@pytest.fixture
def spans() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced_worker(
    temporal_client: Client, task_queue: str, spans: InMemorySpanExporter
) -> AsyncIterator[OtelTelemetry]:
    """In-memory telemetry installed for the test, and an in-process worker built under it."""
    with telemetry.installed(OtelTelemetry.in_memory(spans)) as installed:
        assert isinstance(installed, OtelTelemetry)
        async with build_worker(temporal_client, task_queue, None, owner=OWNER):
            yield installed


async def llm_task(client: Client, queue: str, tmp_path: Path, task_id: str) -> TaskResult:
    """The sample task, developed and reviewed by LLM agents on the fake server."""
    with FakeLLMServer.for_roles(developer=developer_replies(), reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url)
        return await run_task(client, queue, repo, task_id)


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan:
    assert span.parent is not None, f"{span.name} has no parent"
    (parent,) = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent


async def test_a_task_is_one_connected_trace_from_submit_to_its_model_tool_and_gate_calls(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    task_id = f"traced-{uuid.uuid4().hex[:8]}"
    result = await llm_task(temporal_client, task_queue, tmp_path, task_id)
    found = spans.get_finished_spans()

    assert result.outcome == "approved"
    # One trace, one root (the submission), every other span's parent in it.
    assert {s.context.trace_id for s in found} == {found[0].context.trace_id}
    (root,) = [s for s in found if s.parent is None]
    assert root.name == f"task {task_id}: Add a sub function"
    assert root.attributes is not None
    assert root.attributes["gen_ai.conversation.id"] == task_id
    ids = {s.context.span_id for s in found}
    assert all(s.parent.span_id in ids for s in found if s.parent is not None)
    names = {s.name for s in found}
    assert {"StartWorkflow:TaskWorkflow", "RunWorkflow:TaskWorkflow"} <= names
    for activity in ("task.develop", "task.run_gates", "task.review", "task.commit"):
        assert f"RunActivity:{activity}" in names

    # The developer's five model calls and five tool calls, the reviewer's one model call.
    chats = named(found, "chat ")
    assert len(chats) == 6
    develop = named(found, "RunActivity:task.develop")[0]
    review = named(found, "RunActivity:task.review")[0]
    for chat in chats:
        attrs = chat.attributes
        assert attrs is not None
        assert chat.name == "chat fake-model"
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "fake-model"
        assert attrs["gen_ai.conversation.id"] == task_id
        assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (10, 5)
        role = attrs["gen_ai.agent.name"]
        assert parent_of(chat, found) is (develop if role == "developer" else review)
    tools = sorted(named(found, "execute_tool "), key=lambda s: s.start_time or 0)
    assert [s.attributes and s.attributes["gen_ai.tool.name"] for s in tools] == TOOLS
    assert all(parent_of(s, found) is develop for s in tools)
    assert all(
        s.attributes and s.attributes["gen_ai.operation.name"] == "execute_tool" for s in tools
    )

    # The gate, with its exit status, under the gates activity.
    (gate,) = named(found, "gate ")
    assert gate.name == "gate check"
    assert gate.attributes is not None
    assert gate.attributes["process.exit.code"] == 0
    assert gate.attributes["semspec.gate.passed"] is True
    assert gate.status.status_code == StatusCode.UNSET
    assert parent_of(gate, found).name == "RunActivity:task.run_gates"


async def test_the_task_run_span_lasts_the_whole_task_and_says_how_it_ended(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    task_id = f"run-span-{uuid.uuid4().hex[:8]}"
    await llm_task(temporal_client, task_queue, tmp_path, task_id)
    found = spans.get_finished_spans()

    (run,) = [s for s in found if s.name == "task run"]
    assert parent_of(run, found).name == "StartWorkflow:TaskWorkflow"
    attrs = run.attributes
    assert attrs is not None
    assert attrs["semspec.task.id"] == attrs["gen_ai.conversation.id"] == task_id
    assert attrs["semspec.task.outcome"] == "approved"
    assert (attrs["semspec.task.iterations"], attrs["semspec.task.retries"]) == (1, 0)
    assert attrs["semspec.task.escalations"] == 0
    assert attrs["semspec.task.input_tokens"] == 60
    assert run.status.status_code == StatusCode.OK
    # From the workflow's start to its end: every step of the task lies inside it.
    steps = [s for s in found if s.name.startswith(("RunActivity:", "chat ", "gate "))]
    assert {s.name.split(":")[0].split(" ")[0] for s in steps} == {"RunActivity", "chat", "gate"}
    assert run.start_time is not None and run.end_time is not None
    assert all(run.start_time <= (s.start_time or 0) for s in steps)
    assert all((s.end_time or 0) <= run.end_time for s in steps)


async def test_replaying_a_traced_task_adds_no_span(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    task_id = f"replayed-{uuid.uuid4().hex[:8]}"
    await llm_task(temporal_client, task_queue, tmp_path, task_id)
    before = [s.name for s in spans.get_finished_spans()]
    history = await temporal_client.get_workflow_handle(task_workflow_id(task_id)).fetch_history()

    replayer = Replayer(
        workflows=[TaskWorkflow, PlanWorkflow],
        interceptors=traced_worker.worker_interceptors(temporal_client),
    )
    replayed = await replayer.replay_workflow(history)

    assert replayed.replay_failure is None
    assert before.count("RunWorkflow:TaskWorkflow") == 1
    assert [s.name for s in spans.get_finished_spans()] == before


async def test_each_task_of_a_plan_started_untraced_is_one_trace(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    # A script per task: b starts from a's commit, and a turn that changes nothing escalates.
    scripts = {name: approving(tmp_path, name) for name in ("a", "b")}
    plan = plan_of(git_repo, scripts, {"b": ["a"]})
    handle = await submit_plan(temporal_client, task_queue, plan, OWNER)
    await handle.result()
    found = spans.get_finished_spans()

    starts = named(found, "StartChildWorkflow:TaskWorkflow")
    assert len(starts) == 2 and all(s.parent is None for s in starts)
    for start in starts:
        trace = [s for s in found if s.context.trace_id == start.context.trace_id]
        names = [s.name for s in trace]
        assert names.count("RunWorkflow:TaskWorkflow") == 1
        assert {"RunActivity:task.develop", "execute_tool write_file", "gate check"} <= set(names)
        assert names.count("task run") == 1


async def test_a_worker_that_takes_over_an_escalated_task_repeats_no_span(
    temporal_client: Client,
    task_queue: str,
    spans: InMemorySpanExporter,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    iterations: list[dict[str, Any]] = [
        {"developer": {"write": {"calc.py": BROKEN_CALC}}},
        {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE},
    ]
    task_id = f"taken-over-{uuid.uuid4().hex[:8]}"
    inp = task_input(
        git_repo, write_script(tmp_path / "s.yaml", iterations), task_id, max_retries=0
    )
    handle = temporal_client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    with telemetry.installed(OtelTelemetry.in_memory(spans)):
        async with build_worker(temporal_client, task_queue, None, owner=OWNER):
            await submit(temporal_client, task_queue, inp, OWNER)
            await wait_for_phase(handle, "escalated")
        # The first worker is gone with its cache: the next one replays the whole history.
        async with build_worker(temporal_client, task_queue, None, owner=OWNER):
            await answer(handle, Resolution("retry", "add must add"))
            result = await handle.result()
    found = spans.get_finished_spans()
    names = [s.name for s in found]

    assert result.outcome == "approved"
    assert {s.context.trace_id for s in found} == {found[0].context.trace_id}
    assert names.count("RunWorkflow:TaskWorkflow") == 1
    assert names.count("StartActivity:task.develop") == names.count("RunActivity:task.develop") == 2
    failed, passed = sorted(named(found, "gate check"), key=lambda s: s.start_time or 0)
    assert failed.attributes is not None and passed.attributes is not None
    # A failed gate is the loop working, not a broken trace: error.type, no error status.
    assert (failed.attributes["process.exit.code"], failed.status.status_code) == (
        1,
        StatusCode.UNSET,
    )
    assert failed.attributes["error.type"] == "gate_failed"
    assert (passed.attributes["process.exit.code"], passed.status.status_code) == (
        0,
        StatusCode.UNSET,
    )
    assert names.count("HandleUpdate:resolve_escalation") == 1
    assert "HandleQuery:status" not in names  # the status polls carried no trace
    # One span for the task's run, written once although the second worker replayed it all.
    (run,) = [s for s in found if s.name == "task run"]
    assert run.attributes is not None
    assert run.attributes["semspec.task.outcome"] == "approved"
    assert run.attributes["semspec.task.escalations"] == 1
    assert run.status.status_code == StatusCode.OK
    events = [e.name for e in run.events]
    assert events.count("escalation") == 1
    (escalated,) = [e for e in run.events if e.name == "escalation"]
    assert escalated.attributes is not None and escalated.attributes["message"]
    assert run.start_time is not None and run.end_time is not None
    assert run.start_time <= escalated.timestamp <= run.end_time


async def test_a_worker_on_a_traced_client_gets_no_second_tracing_interceptor(
    temporal_client: Client, spans: InMemorySpanExporter
) -> None:
    traces = OtelTelemetry.in_memory(spans)
    traced = traces.traced_client(temporal_client)

    assert traces.traced_client(traced) is traced
    assert traces.worker_interceptors(traced) == []
    assert len(traces.worker_interceptors(temporal_client)) == 1


async def test_a_refused_model_call_is_a_failed_chat_span_and_the_retried_activity_a_new_span(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    task_id = f"refused-{uuid.uuid4().hex[:8]}"
    refused = FakeReply(status=429, error_message="rate limit reached", retry_after=0.1)
    developer = [refused, *developer_replies()]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url)
        result = await run_task(temporal_client, task_queue, repo, task_id)
    found = spans.get_finished_spans()

    assert result.outcome == "approved"
    first, retry = sorted(named(found, "RunActivity:task.develop"), key=lambda s: s.start_time or 0)
    (failed,) = [s for s in named(found, "chat ") if s.attributes and "error.type" in s.attributes]
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "rate_limited"
    assert parent_of(failed, found) is first
    assert len([s for s in named(found, "chat ") if parent_of(s, found) is retry]) == 5
    # The task recovered: no span of its trace is an error, the refused attempt says why.
    assert [s.name for s in found if s.status.status_code == StatusCode.ERROR] == []
    assert [e.name for e in first.events] == ["exception"]
    (run,) = [s for s in found if s.name == "task run"]
    assert run.status.status_code == StatusCode.OK


@pytest.mark.usefixtures("unfenced_gates")
async def test_a_risk_signal_is_an_event_of_the_task_run_span(
    temporal_client: Client,
    task_queue: str,
    traced_worker: OtelTelemetry,
    spans: InMemorySpanExporter,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    go = tmp_path / "go"
    # The gate holds the task until the test has delivered the monitor's flag.
    held = GateSpec("held", f"sh -c 'while [ ! -f {go} ]; do sleep 0.1; done'", True, 60.0, ".")
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC, "README.md": "x\n"}}, "reviewer": APPROVE}],
    )
    inp = task_input(git_repo, script, f"flagged-{uuid.uuid4().hex[:8]}", gates=[held])
    await submit(temporal_client, task_queue, inp, OWNER)
    handle = temporal_client.get_workflow_handle(
        task_workflow_id(inp.spec.task_id), result_type=TaskResult
    )
    await wait_for_phase(handle, "gates")
    outside = {"outside": ["README.md"]}
    flag = RiskSignalInput("scope_creep", "warn", "s1", "outside: README.md", outside)
    await send(handle, SIGNAL_FLAG, flag)
    await wait_for_log(handle, "signal")
    go.touch()
    result = await handle.result()
    found = spans.get_finished_spans()

    assert result.outcome == "approved"
    (run,) = [s for s in found if s.name == "task run"]
    assert run.attributes is not None and run.attributes["semspec.task.flags"] == 1
    (event,) = [e for e in run.events if e.name == "risk signal"]
    assert event.attributes is not None and "scope_creep" in str(event.attributes["message"])
    assert run.start_time is not None and run.end_time is not None
    assert run.start_time <= event.timestamp <= run.end_time
    assert run.status.status_code == StatusCode.OK
