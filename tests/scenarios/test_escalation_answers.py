"""Scenario: a task escalates and a human answers with each action in turn.

The developer breaks the round trip of ``format(parse(url))``, so the test gate fails and, with
no retries allowed (``loop.max_retries: 0``), the loop escalates at once. The human answers on
the CLI with ``escalations resolve``:

- ``retry`` with guidance: the guidance reaches the loop and the next attempt is approved;
- ``approve``: the worktree is committed as it is, approved by the human;
- ``abort``: the task ends without a commit;
- ``extend-budget``: the task gets more retries and is approved in one of them.

A task a failed assertion leaves waiting is aborted after its test, so the next task on the
same file is not halted as a rival.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    project_config,
    with_new_function,
    without_fragment_support,
)
from tests.support.scenario_tasks import (
    APPROVE,
    EXIT_ESCALATED,
    branch_commits,
    entries,
    file_at,
    finished,
    new_id,
    resolve,
    submit,
)
from tests.support.stack import Stack

BROKEN = {"developer": {"write": {FORMAT_PY: without_fragment_support()}}}
BROKEN_AGAIN = {"developer": {"write": {FORMAT_PY: without_fragment_support() + "# again\n"}}}
FIXED = {"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}


@pytest.fixture(scope="module")
def project(stack: Stack) -> Iterator[Path]:
    # No retries: the first failing attempt exhausts the budget (one gate run per escalation).
    config = project_config(stack, "escalations", loop={"max_retries": 0})
    yield make_project(stack, "escalations", config)


@pytest.fixture
def submitted(stack: Stack, project: Path) -> Iterator[list[str]]:
    """Ids of the test's tasks; any still waiting on a human afterwards is aborted."""
    ids: list[str] = []
    yield ids
    for task_id in ids:
        stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=project)


def escalated(
    stack: Stack, repo: Path, submitted: list[str], iterations: list[dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """Submit a task that escalates with budget_exhausted; its id and the pending escalation."""
    task_id = new_id("escalated")
    submitted.append(task_id)
    code, status = submit(stack, repo, task_id, [FORMAT_PY], iterations)
    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    escalation = status["pending_escalation"]
    assert escalation["reason"] == "budget_exhausted"
    return task_id, escalation


def test_retry_with_guidance_resumes_the_task_and_it_is_approved(
    stack: Stack, project: Path, submitted: list[str]
) -> None:
    task_id, escalation = escalated(stack, project, submitted, [BROKEN, FIXED])
    listed = stack.cli_json("escalations", "list", repo=project)
    assert [e["escalation_id"] for e in listed if e["task_id"] == task_id] == [
        escalation["escalation_id"]
    ]
    guidance = "keep url.hash in format(); the round-trip test needs it"
    ack = resolve(stack, project, escalation["escalation_id"], "retry", "--guidance", guidance)
    assert ack["action"] == "retry"
    final = finished(stack, project, task_id)
    assert final["outcome"] == "approved"
    assert final["iteration"] == 2
    assert entries(final, "resolution") == [f"retry by human: {guidance}"]
    assert file_at(project, final["commit_id"], FORMAT_PY) == with_new_function()


def test_approve_commits_the_worktree_as_it_is(
    stack: Stack, project: Path, submitted: list[str]
) -> None:
    task_id, _ = escalated(stack, project, submitted, [BROKEN])
    resolve(stack, project, task_id, "approve")
    final = finished(stack, project, task_id)
    assert final["outcome"] == "approved"
    commits = branch_commits(project, task_id)
    assert [str(c.id) for c in commits] == [final["commit_id"]]
    assert "approved by human" in commits[0].message
    committed = file_at(project, final["commit_id"], FORMAT_PY)
    assert committed == without_fragment_support()


def test_abort_ends_the_task_without_a_commit(
    stack: Stack, project: Path, submitted: list[str]
) -> None:
    task_id, _ = escalated(stack, project, submitted, [BROKEN])
    resolve(stack, project, task_id, "abort")
    final = finished(stack, project, task_id)
    assert final["outcome"] == "aborted"
    assert final["commit_id"] is None
    assert branch_commits(project, task_id) == []
    assert all(e["task_id"] != task_id for e in stack.cli_json("escalations", "list", repo=project))


def test_extend_budget_grants_retries_and_the_task_is_approved_within_them(
    stack: Stack, project: Path, submitted: list[str]
) -> None:
    task_id, _ = escalated(stack, project, submitted, [BROKEN, BROKEN_AGAIN, FIXED])
    ack = resolve(stack, project, task_id, "extend-budget", "--extra-retries", "2")
    assert ack["action"] == "extend_budget"
    final = finished(stack, project, task_id)
    assert final["outcome"] == "approved"
    assert final["iteration"] == 3
    assert len(entries(final, "escalation")) == 1  # answered once, never asked again
    assert final["max_retries"] == 2
