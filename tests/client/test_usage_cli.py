"""``semspec usage`` against a real Temporal server: task workflows' memos read back and summed.

A tiny stand-in registered as the task workflow type upserts the memo the real one writes
(``UsageTotals.to_memo`` under ``USAGE_MEMO``, the plan under ``PLAN_MEMO``); each test runs in
its own namespace so tasks of other tests on the session server stay out of the totals.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio import workflow
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from typer.testing import CliRunner, Result

from semspec.agents.protocol import TurnUsage
from semspec.cli.app import app
from semspec.cli.usage_cmd import read_spending
from semspec.core.errors import InputError
from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_workflow_id
from semspec.workflow.task.usage import PLAN_MEMO, USAGE_MEMO, UsageTotals


@dataclass
class MemoInput:
    memos: list[dict[str, Any]] = field(default_factory=list)
    """Upserted one per run: a second memo makes the first run continue as new."""
    finish: bool = True


# Unsandboxed: the sandbox would re-import this test module and the CLI it imports.
@workflow.defn(name=TASK_WORKFLOW, sandboxed=False)
class MemoTaskWorkflow:
    """Writes a task's usage memo as the task workflow does, then ends or waits."""

    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, inp: MemoInput) -> None:
        workflow.upsert_memo(inp.memos[0])
        if len(inp.memos) > 1:
            workflow.continue_as_new(MemoInput(inp.memos[1:], inp.finish))
        if not inp.finish:
            await workflow.wait_condition(lambda: self.done)

    @workflow.signal(name="finish")
    def finish(self) -> None:
        self.done = True


def memo(*turns: TurnUsage, plan_id: str | None = None) -> dict[str, Any]:
    spent = UsageTotals()
    for turn in turns:
        spent.add(turn)
    written: dict[str, Any] = {USAGE_MEMO: spent.to_memo()}
    if plan_id is not None:
        written[PLAN_MEMO] = plan_id
    return written


GPT = TurnUsage(
    steps=3, input_tokens=3_000, output_tokens=300, cached_tokens=1_000, cost_usd=0.01, model="m"
)
LOCAL = TurnUsage(steps=2, input_tokens=500, output_tokens=50, model="local", unpriced=True)


@pytest.fixture
async def namespace(temporal_env: WorkflowEnvironment) -> str:
    name = f"usage-{uuid.uuid4().hex[:8]}"
    await temporal_env.client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name, workflow_execution_retention_period=Duration(seconds=86_400)
        )
    )
    return name


@pytest.fixture
async def client(temporal_env: WorkflowEnvironment, namespace: str) -> Client:
    address = temporal_env.client.service_client.config.target_host
    return await Client.connect(address, namespace=namespace)


@pytest.fixture
async def worker(client: Client) -> AsyncIterator[str]:
    queue = f"tq-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[MemoTaskWorkflow]):
        yield queue


async def start(
    client: Client, queue: str, task_id: str, inp: MemoInput
) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        MemoTaskWorkflow.run, inp, id=task_workflow_id(task_id), task_queue=queue
    )


def usage(repo: Path, client: Client, *args: str) -> Result:
    env = {
        "SEMSPEC_SERVICES__TEMPORAL__ADDRESS": client.service_client.config.target_host,
        "SEMSPEC_SERVICES__TEMPORAL__NAMESPACE": client.namespace,
        "SEMSPEC_SERVICES__NATS__URL": "nats://127.0.0.1:9",  # not used; the config wants one
    }
    return CliRunner().invoke(app, ["--repo", str(repo), "usage", *args], env=env)


async def usage_json_when(
    repo: Path, client: Client, ready: Callable[[dict[str, Any]], bool], *args: str
) -> dict[str, Any]:
    """``semspec usage --json`` once ``ready`` holds (the visibility store lags the memo)."""
    data: dict[str, Any] = {}
    for _ in range(100):
        result = await asyncio.to_thread(usage, repo, client, "--json", *args)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        if ready(data):
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"usage never became ready: {data}")


def tasks_seen(count: int) -> Callable[[dict[str, Any]], bool]:
    return lambda data: bool(data["total"]["tasks"] == count and data["total"]["steps"])


async def test_usage_sums_finished_and_running_tasks_from_their_memos(
    client: Client, worker: str, tmp_path: Path
) -> None:
    await (await start(client, worker, "done", MemoInput([memo(GPT, plan_id="p1")]))).result()
    running = await start(client, worker, "busy", MemoInput([memo(GPT, LOCAL)], finish=False))

    data = await usage_json_when(
        tmp_path, client, lambda d: d["total"]["running"] == 1 and d["total"]["steps"] == 8
    )
    await running.signal(MemoTaskWorkflow.finish)

    rows = {g["key"]: g for g in data["groups"]}
    assert data["by"] == "task"
    assert (rows["done"]["running"], rows["busy"]["running"]) == (0, 1)
    assert rows["busy"]["unpriced_models"] == ["local"]
    assert data["total"] == {
        "key": "total",
        "tasks": 2,
        "running": 1,
        "steps": 8,
        "input_tokens": 6_500,
        "cached_tokens": 2_000,
        "output_tokens": 650,
        "cost_usd": 0.02,
        "unpriced_models": ["local"],
    }


async def test_usage_groups_by_plan_and_by_model(
    client: Client, worker: str, tmp_path: Path
) -> None:
    for task_id, inp in (
        ("a", MemoInput([memo(GPT, plan_id="p1")])),
        ("b", MemoInput([memo(GPT, LOCAL, plan_id="p1")])),
        ("c", MemoInput([memo(LOCAL)])),
    ):
        await (await start(client, worker, task_id, inp)).result()

    by_plan = await usage_json_when(tmp_path, client, tasks_seen(3), "--by", "plan")
    by_model = await usage_json_when(tmp_path, client, tasks_seen(3), "--by", "model")

    plans = {g["key"]: (g["tasks"], g["steps"]) for g in by_plan["groups"]}
    assert plans == {"p1": (2, 8), "(no plan)": (1, 2)}
    models = {g["key"]: (g["tasks"], g["steps"], g["cost_usd"]) for g in by_model["groups"]}
    assert models == {"m": (2, 6, 0.02), "local": (2, 4, 0.0)}


async def test_a_checkpointed_task_counts_once_with_its_latest_memo(
    client: Client, worker: str, tmp_path: Path
) -> None:
    twice = TurnUsage(steps=6, input_tokens=6_000, output_tokens=600, cost_usd=0.02, model="m")
    checkpointed = MemoInput([memo(GPT), memo(twice)])
    await (await start(client, worker, "long", checkpointed)).result()

    data = await usage_json_when(tmp_path, client, tasks_seen(1))

    assert [(g["key"], g["steps"], g["cost_usd"]) for g in data["groups"]] == [("long", 6, 0.02)]


async def test_a_checkpointed_task_started_when_its_first_run_did(
    client: Client, worker: str
) -> None:
    handle = await start(client, worker, "long", MemoInput([memo(GPT), memo(GPT)]))
    await handle.result()
    first_run = client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    first_start = (await first_run.describe()).start_time

    for _ in range(100):
        spent = await read_spending(client)
        if spent and spent[0].usage.steps:
            break
        await asyncio.sleep(0.1)

    assert [(s.task_id, s.started, s.running) for s in spent] == [("long", first_start, False)]


async def test_the_table_marks_running_tasks_and_unknown_prices_and_ends_with_a_total(
    client: Client, worker: str, tmp_path: Path
) -> None:
    running = await start(client, worker, "busy", MemoInput([memo(GPT, LOCAL)], finish=False))
    await usage_json_when(tmp_path, client, tasks_seen(1))

    result = await asyncio.to_thread(usage, tmp_path, client, "--wide")
    await running.signal(MemoTaskWorkflow.finish)

    assert result.exit_code == 0, result.output
    lines = [" ".join(line.replace("│", " ").split()) for line in result.stdout.splitlines()]
    assert "busy 1 5 3,500 1,000 350 $0.0100 + unpriced (model local) running" in lines
    assert "total 1 5 3,500 1,000 350 $0.0100 + unpriced (model local) 1 running" in lines


def test_an_unknown_grouping_is_refused_before_connecting(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "usage", "--by", "week"])
    assert isinstance(result.exception, InputError)
    assert "--by week" in result.exception.message
    assert result.exception.hint is not None and "task, plan, day, model" in result.exception.hint
