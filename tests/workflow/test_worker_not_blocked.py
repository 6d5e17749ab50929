"""A long tool call in one task does not stall another task on the same worker.

Task A's LLM developer asks for a search that takes long; task B, played by scripted agents, runs
on the same in-process worker meanwhile. Two kinds of long: a search that backtracks a little on
each of many lines (minutes in all; a halt stops it between lines), and one match that backtracks
for minutes on a single line, which the search ends as too costly. Both run in a thread that
leaves the event loop free (``re`` would hold the GIL through the single match and freeze B), so
B goes from start to approval while A's search is still running.
"""

from __future__ import annotations

import asyncio
import json
import string
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from temporalio.client import Client, WorkflowHandle

from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import SIGNAL_HALT, task_workflow_id
from semspec.workflow.task.messages import Resolution, TaskResult
from semspec.workflow.worker import build_worker
from tests.fakes.llm_server import FakeLLMServer, call
from tests.fakes.llm_task import NEW_CALC, TASK_CRITERION, TASK_TITLE, approve_reply, sample_repo
from tests.support.hostile_tree import SLOW_QUERY, SLOW_TEXT
from tests.support.owner import OWNER, answer, send
from tests.support.repos import SIGNATURE
from tests.support.tasks import GOOD_CALC, start, task_input, wait_for_phase, write_script

WAIT_S = 120.0
SLOW_FILES = {f"data/words-{n}.txt": SLOW_TEXT for n in range(2)}
# SLOW_QUERY backtracks 2**26 ways on this one line: a single match of seconds to minutes.
COSTLY_FILES = {"data/alphabet.txt": string.ascii_lowercase + "\n"}
HALT = RiskSignalInput("conflicting_changes", "halt", "h-slow", "stop the slow search")


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
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


async def _start_searching(
    client: Client, queue: str, llm: FakeLLMServer, root: Path, files: dict[str, str]
) -> WorkflowHandle[Any, TaskResult]:
    """Start task A on a repository holding ``files``; return once its developer was asked
    for its first call (the search)."""
    repo = sample_repo(root, llm.base_url)
    _commit(repo, files)
    task_id = f"slow-{uuid.uuid4().hex[:8]}"
    draft = TaskDraft(
        title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=task_id
    )
    await submit(client, queue, build_task_input(draft, load_config(repo), repo), OWNER)
    handle = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    await wait_for_phase(handle, "developer")
    while not llm.requests_for("developer"):
        await asyncio.sleep(0.05)
    return handle


async def _run_quick_task(client: Client, queue: str, git_repo: Path, tmp_path: Path) -> TaskResult:
    """Task B, scripted, from start to its result."""
    script = write_script(
        tmp_path / "quick.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
    )
    quick = await start(
        client, task_input(git_repo, script, f"quick-{uuid.uuid4().hex[:8]}"), queue
    )
    result: TaskResult = await asyncio.wait_for(quick.result(), WAIT_S)
    return result


async def test_a_task_finishes_while_another_tasks_tool_call_runs_on_the_same_worker(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    slow_search = call("search", {"query": SLOW_QUERY, "regex": True})
    llm = FakeLLMServer.for_roles(
        developer=[slow_search, call("submit", {"summary": "s"})], reviewer=[approve_reply()]
    )
    with llm:
        slow = await _start_searching(temporal_client, worker, llm, tmp_path / "slow", SLOW_FILES)
        quick_result = await _run_quick_task(temporal_client, worker, git_repo, tmp_path)
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


async def test_a_task_finishes_while_one_costly_match_runs_and_that_search_ends_as_too_costly(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    developer = [
        call("search", {"query": SLOW_QUERY, "regex": True}),
        call("write_file", {"path": "calc.py", "content": NEW_CALC}),
        call("submit", {"summary": "sub"}),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        costly = await _start_searching(
            temporal_client, worker, llm, tmp_path / "costly", COSTLY_FILES
        )
        quick_result = await _run_quick_task(temporal_client, worker, git_repo, tmp_path)
        # The single match was still running all along B's task.
        developer_calls = len(llm.requests_for("developer"))
        costly_result = await asyncio.wait_for(costly.result(), WAIT_S)
        after_search = llm.last_messages(1, route="developer")[-1]

    assert quick_result.outcome == "approved"
    assert developer_calls == 1
    searched = json.loads(after_search["content"])
    assert searched["ok"] is False
    assert "pattern too costly: matching it against data/alphabet.txt:1" in searched["error"]
    assert costly_result.outcome == "approved"
