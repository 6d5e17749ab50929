"""A long tool call in one task does not stall another task on the same worker.

Task A's LLM developer asks for a search that legitimately takes minutes (a costly regular
expression over a few thousand lines); task B, played by scripted agents, runs on the same
in-process worker meanwhile. Tool calls run in a thread, so B goes from start to approval while
A's search is still running, and A's step keeps heartbeating; a halt then stops A's step.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest
from temporalio.client import Client

from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import SIGNAL_HALT, task_workflow_id
from semspec.workflow.task.messages import Resolution, TaskResult
from semspec.workflow.worker import build_worker
from tests.fakes.llm_server import FakeLLMServer, call
from tests.fakes.llm_task import TASK_CRITERION, TASK_TITLE, approve_reply, sample_repo
from tests.support.owner import OWNER, OWNER_KEY, answer, send
from tests.support.repos import SIGNATURE
from tests.support.tasks import GOOD_CALC, start, task_input, wait_for_phase, write_script

WAIT_S = 120.0
# Backtracks a few milliseconds on each line below that has no "=": minutes for the files.
SLOW_QUERY = r"(\w+\s?)+="
SLOW_LINE = "abcdefghijklmn\n"
SLOW_FILES = {f"data/words-{n}.txt": SLOW_LINE * 30_000 for n in range(2)}
HALT = RiskSignalInput("conflicting_changes", "halt", "h-slow", "stop the slow search")


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner_key=OWNER_KEY):
        yield task_queue


def _commit(path: Path, files: dict[str, str]) -> None:
    """Commit ``files`` on top of the repository's ``main``."""
    repo = pygit2.Repository(str(path))
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")
        repo.index.add(rel)
    repo.index.write()
    tree = repo.index.write_tree()
    repo.create_commit("HEAD", SIGNATURE, SIGNATURE, "data", tree, [repo.head.target])


async def test_a_task_finishes_while_another_tasks_tool_call_runs_on_the_same_worker(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    slow_search = call("search", {"query": SLOW_QUERY, "regex": True})
    llm = FakeLLMServer.for_roles(
        developer=[slow_search, call("submit", {"summary": "s"})], reviewer=[approve_reply()]
    )
    with llm:
        repo = sample_repo(tmp_path / "slow", llm.base_url)
        _commit(repo, SLOW_FILES)
        slow_id = f"slow-{uuid.uuid4().hex[:8]}"
        draft = TaskDraft(
            title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=slow_id
        )
        await submit(
            temporal_client, worker, build_task_input(draft, load_config(repo), repo), OWNER
        )
        slow = temporal_client.get_workflow_handle(
            task_workflow_id(slow_id), result_type=TaskResult
        )
        await wait_for_phase(slow, "developer")
        while not llm.requests_for("developer"):
            await asyncio.sleep(0.05)

        script = write_script(
            tmp_path / "quick.yaml",
            [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
        )
        quick = await start(
            temporal_client, task_input(git_repo, script, f"quick-{uuid.uuid4().hex[:8]}"), worker
        )
        quick_result: TaskResult = await asyncio.wait_for(quick.result(), WAIT_S)
        # A's search has not answered yet: its step made one LLM call, with no retry of the
        # step after a missed heartbeat.
        developer_calls = len(llm.requests_for("developer"))

        await send(slow, SIGNAL_HALT, HALT)
        status = await wait_for_phase(slow, "escalated")
        await answer(slow, Resolution("abort"))
        slow_result = await asyncio.wait_for(slow.result(), WAIT_S)

    assert quick_result.outcome == "approved"
    assert developer_calls == 1
    assert status.pending_escalation is not None
    assert status.pending_escalation.message.endswith("the running developer step was cancelled")
    assert slow_result.outcome == "aborted"
