"""LLM failures inside a task on an in-process worker: who retries what.

A malformed reviewer reply is retried by the reviewer agent itself (within one activity); an
HTTP 429 from the developer's provider fails the activity as ``rate_limited`` and Temporal's
retry policy runs it again. Either way the task still ends approved and committed. A missing
API key variable is a config error: no retry, no request, and the reason names the field.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pygit2
import pytest
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from semspec.agents.review_prompt import FORMAT_CORRECTION
from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import TaskResult
from semspec.workflow.worker import build_worker
from tests.fakes.llm_server import FakeLLMServer, http_error, text
from tests.fakes.llm_task import (
    NEW_CALC,
    TASK_CRITERION,
    TASK_TITLE,
    approve_reply,
    developer_replies,
    sample_repo,
)
from tests.support.owner import OWNER

RESULT_TIMEOUT_S = 120.0
CORRECTION_START = FORMAT_CORRECTION.split("{error}")[0]


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    """An in-process worker (no event publisher) on a fresh task queue."""
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


async def run_task(client: Client, task_queue: str, repo: Path, task_id: str) -> TaskResult:
    """Submit the sample task the way ``semspec task submit`` does and wait for its result."""
    draft = TaskDraft(
        title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=task_id
    )
    await submit(client, task_queue, build_task_input(draft, load_config(repo), repo), OWNER)
    handle = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    # Bounded: a task that escalates instead of ending would otherwise wait for a human forever.
    result: TaskResult = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT_S)
    return result


async def activity_attempts(client: Client, task_id: str) -> list[tuple[str, int, str]]:
    """(activity type, attempt, type of the previous attempt's failure) per started activity."""
    scheduled: dict[int, str] = {}
    attempts: list[tuple[str, int, str]] = []
    handle = client.get_workflow_handle(task_workflow_id(task_id))
    async for event in handle.fetch_history_events():
        assert isinstance(event, HistoryEvent)
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = name
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            failure = started.last_failure.application_failure_info.type
            attempts.append((scheduled[started.scheduled_event_id], started.attempt, failure))
    return attempts


def committed_calc(repo: Path, commit_id: str | None) -> str:
    """calc.py as committed by the task."""
    assert commit_id is not None
    git = pygit2.Repository(str(repo))
    commit = git.get(commit_id)
    assert isinstance(commit, pygit2.Commit)
    blob = git[commit.tree["calc.py"].id]
    assert isinstance(blob, pygit2.Blob)
    return blob.data.decode()


async def test_a_reviewer_that_answers_malformed_twice_is_corrected_within_one_activity(
    temporal_client: Client, worker: str, tmp_path: Path
) -> None:
    reviewer = [
        text("Looks good to me, ship it!"),
        text('{"verdict": "ship-it", "summary": "fine"}'),
        approve_reply(),
    ]
    with FakeLLMServer.for_roles(developer=developer_replies(), reviewer=reviewer) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url)
        result = await run_task(temporal_client, worker, repo, "malformed-review")
        reviews = llm.requests_for("reviewer")

    assert result.outcome == "approved"
    assert result.status.last_verdict is not None
    assert result.status.last_verdict.verdict == "approve"
    assert result.status.last_verdict.reason is None
    assert committed_calc(repo, result.commit_id) == NEW_CALC
    # Three calls; each retry carries the rejected reply and the correction.
    assert len(reviews) == 3
    corrections = [
        [m for m in r.body["messages"] if str(m["content"]).startswith(CORRECTION_START)]
        for r in reviews
    ]
    assert [len(c) for c in corrections] == [0, 1, 2]
    assert "verdict" in corrections[2][1]["content"]  # names the field to fix
    echoed = [m["content"] for m in reviews[2].body["messages"] if m["role"] == "assistant"]
    assert echoed == [reviewer[0].text, reviewer[1].text]
    # The agent fixed it; Temporal never retried the review activity.
    attempts = await activity_attempts(temporal_client, "malformed-review")
    assert [a for a in attempts if a[0] == "task.review"] == [("task.review", 1, "")]


async def test_a_rate_limited_developer_is_retried_by_temporal_and_the_task_completes(
    temporal_client: Client, worker: str, tmp_path: Path
) -> None:
    developer = [
        developer_replies()[0],
        http_error(429, "rate limit reached, slow down", retry_after=0.1),
        *developer_replies(),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url)
        result = await run_task(temporal_client, worker, repo, "rate-limited-dev")
        developer_calls = llm.requests_for("developer")
        unused = llm.remaining("developer")

    assert result.outcome == "approved"
    assert result.iterations == 1
    assert committed_calc(repo, result.commit_id) == NEW_CALC
    # The first attempt made two calls (the second got the 429); the retry ran the whole script.
    assert len(developer_calls) == 7
    assert unused == 0
    attempts = await activity_attempts(temporal_client, "rate-limited-dev")
    develops = [a for a in attempts if a[0] == "task.develop"]
    assert develops == [("task.develop", 2, "rate_limited")]


async def test_a_missing_api_key_variable_fails_the_task_naming_the_field_before_any_call(
    temporal_client: Client, worker: str, tmp_path: Path
) -> None:
    unset = "E2E_KEY_THAT_NOBODY_EXPORTS"
    with FakeLLMServer.for_roles(developer=developer_replies()) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, api_key_env=unset)
        result = await run_task(temporal_client, worker, repo, "missing-key")
        calls = llm.requests

    assert result.outcome == "failed"
    assert result.commit_id is None
    assert result.reason is not None
    assert "models.developer.api_key_env" in result.reason
    assert unset in result.reason
    assert calls == []
    # A config error is not retried: one attempt, then the task stops.
    attempts = await activity_attempts(temporal_client, "missing-key")
    assert [a for a in attempts if a[0] == "task.develop"] == [("task.develop", 1, "")]
