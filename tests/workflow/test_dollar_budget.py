"""A task's dollars outside its status: the Temporal memo and the ``finished`` event.

An in-process worker runs the sample task with LLM agents on the fake server; the project's
registry prices the model so each call costs $0.02. The budget's behaviour on the CLI is in
``tests/scenarios/test_dollar_budget.py``; its rules alone in ``test_dollar_budget_rules.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import TaskResult
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.usage import PLAN_MEMO, USAGE_MEMO, UsageTotals
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_task import (
    TASK_CRITERION,
    TASK_TITLE,
    approve_reply,
    developer_replies,
    sample_repo,
)
from tests.support.monitor_probe import messages_for
from tests.support.owner import OWNER
from tests.support.tasks import owner_worker

CALL_USD = 0.02
PRICE = {"input_per_1m": 1_000.0, "output_per_1m": 2_000.0}


@pytest.fixture
async def worker(
    temporal_client: Client, task_queue: str, nats_url: str
) -> AsyncIterator[EventPublisher]:
    async with owner_worker(temporal_client, task_queue, nats_url) as publisher:
        yield publisher


async def test_a_task_keeps_its_usage_in_the_memo_and_sends_it_with_finished(
    temporal_client: Client, task_queue: str, worker: EventPublisher, nats_url: str, tmp_path: Path
) -> None:
    task_id = "memo-usage"
    draft = TaskDraft(
        title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=task_id
    )
    draft.plan_id = "plan-memo"
    with FakeLLMServer.for_roles(developer=developer_replies(), reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, price=PRICE)
        inp = build_task_input(draft, load_config(repo), repo)
        await submit(temporal_client, task_queue, inp, OWNER)
        handle = temporal_client.get_workflow_handle(
            task_workflow_id(task_id), result_type=TaskResult
        )
        result: TaskResult = await asyncio.wait_for(handle.result(), 120)

    assert result.outcome == "approved"
    memo = await (await handle.describe()).memo()
    usage = UsageTotals.from_memo(memo[USAGE_MEMO])
    assert usage.cost_usd == pytest.approx(6 * CALL_USD)  # five developer calls, one review
    assert (usage.input_tokens, usage.output_tokens) == (60, 30)
    assert memo[PLAN_MEMO] == "plan-memo"
    assert result.status.usage.cost_usd == pytest.approx(usage.cost_usd)

    finished = await asyncio.to_thread(messages_for, nats_url, "agent.monitor.finished", task_id)
    assert len(finished) == 1
    data = finished[0]["data"]
    assert data["cost_usd"] == pytest.approx(6 * CALL_USD)
    assert (data["input_tokens"], data["output_tokens"], data["unpriced_models"]) == (60, 30, [])
