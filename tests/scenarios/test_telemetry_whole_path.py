"""Scenario: with ``telemetry.enabled``, a task submitted on the CLI is one trace at the
configured OTLP receiver, sent by two processes: ``task submit`` (the root span) and the
stack's worker (the workflow, its activities, the agent's steps and the gate); the monitor sends
its metrics there too.

The stack is this test's own (``semspec up`` with the telemetry section): the worker reads its
config at start. The receiver is a tiny OTLP/HTTP server on loopback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from semspec.vocabulary.workflow_names import task_workflow_id
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.scenario_tasks import APPROVE, new_id
from tests.support.stack import check_gate, running_stack, sample_config

NEW_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
METRICS = {"semspec.monitor.events", "semspec.monitor.consumer.lag", "semspec.monitor.tasks"}
EXPORT_WAIT_S = 60.0
"""The worker's spans leave in batches every 5 s; the monitor's metrics every half second."""


def wait_for(receiver: OtlpReceiver, done: Callable[[OtlpReceiver], bool], what: str) -> None:
    deadline = time.monotonic() + EXPORT_WAIT_S
    while not done(receiver):
        if time.monotonic() > deadline:
            names = sorted({s.name for s in receiver.received()})
            raise AssertionError(f"never received {what}; spans: {names}")
        time.sleep(0.2)


def the_task_finished(receiver: OtlpReceiver) -> bool:
    return any(s.name == "CompleteWorkflow:TaskWorkflow" for s in receiver.received())


def trace_of(spans: list[ReceivedSpan], task_id: str) -> list[ReceivedSpan]:
    (root,) = [
        s for s in spans if s.attributes.get("semspec.task.id") == task_id and not s.parent_id
    ]
    return [s for s in spans if s.trace_id == root.trace_id]


def test_a_task_submitted_on_the_cli_is_one_trace_from_the_cli_and_the_worker(
    tmp_path: Path,
) -> None:
    task_id = new_id("traced")
    with OtlpReceiver() as receiver:
        telemetry = {"enabled": True, "endpoint": receiver.url, "metrics_interval_s": 0.5}
        config = sample_config([check_gate()], telemetry=telemetry)
        with running_stack(tmp_path, config) as stack:
            iterations = [{"developer": {"write": {"calc.py": NEW_CALC}}, "reviewer": APPROVE}]
            done = stack.submit_scripted(task_id, iterations, "--wait", "--json")
            assert done.returncode == 0, done.stdout + done.stderr
            assert json.loads(done.stdout)["outcome"] == "approved"
            wait_for(receiver, the_task_finished, "the workflow's last span")
            wait_for(receiver, lambda r: r.metrics.keys() >= METRICS, "the monitor's metrics")
        spans = receiver.received()

    trace = trace_of(spans, task_id)
    (root,) = [s for s in trace if not s.parent_id]
    assert root.resource["semspec.component"] == "cli"
    assert root.name.startswith(f"task {task_id}: ")
    (run,) = [s for s in trace if s.name == "task run"]
    assert (run.attributes["semspec.task.outcome"], run.error) == ("approved", False)
    assert run.resource["semspec.component"] == "worker"
    assert {s.resource["service.name"] for s in trace} == {"semspec"}
    assert {s.resource["semspec.component"] for s in trace} == {"cli", "worker"}
    ids = {s.span_id for s in trace}
    assert all(s.parent_id in ids for s in trace if s.parent_id)
    # Nothing of the task's workflow went to another trace.
    workflow_id = task_workflow_id(task_id)
    assert all(s in trace for s in spans if s.attributes.get("temporalWorkflowID") == workflow_id)
    names = {s.name for s in trace}
    assert {"StartWorkflow:TaskWorkflow", "RunWorkflow:TaskWorkflow"} <= names
    assert {"RunActivity:task.develop", "RunActivity:task.run_gates"} <= names
    tools = [s for s in trace if s.name.startswith("execute_tool ")]
    assert tools and all(s.attributes["gen_ai.conversation.id"] == task_id for s in tools)
    (gate,) = [s for s in trace if s.name == "gate check"]
    assert (gate.attributes["process.exit.code"], gate.error) == (0, False)
    assert {receiver.metrics[name]["semspec.component"] for name in METRICS} == {"monitor"}
