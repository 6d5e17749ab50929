"""Scenario: a developer turn that changes nothing is not a submission (issue 24).

The developer (the ``openai`` provider on the fake server) only says it is done. The loop sends
the turn back once with that said, then escalates ``no_change``; no gate or reviewer runs on an
unchanged worktree. A human who approves anyway gets an approved task and no commit: the base
commit is never reported as "committed".
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from semspec.workflow.task.loop.empty_turn import NO_CHANGE_FEEDBACK
from tests.fakes.llm_server import FakeLLMServer, call
from tests.scenarios.test_dollar_budget import escalation_reasons, project, submit, wait_done
from tests.support.scenario_tasks import EXIT_ESCALATED, entries, new_id, resolve
from tests.support.stack import Stack


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer.for_roles() as server:
        yield server


def test_a_developer_that_changes_nothing_is_told_once_then_escalates_no_change(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo = project(stack, llm, "no-change", budget=None)
    done_saying = call("submit", {"summary": "all done"})
    llm.push(done_saying, done_saying, route="developer")
    task_id = new_id("nochange")

    code, status = submit(stack, repo, task_id)

    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    assert status["pending_escalation"]["reason"] == "no_change"
    assert "changed no file in 2 turns" in status["pending_escalation"]["message"]
    second_turn = json.dumps(llm.requests_for("developer")[1].body)
    assert NO_CHANGE_FEEDBACK in second_turn
    assert llm.requests_for("reviewer") == [] and entries(status, "gate") == []

    resolve(stack, repo, task_id, "approve")
    done = wait_done(stack, repo, task_id)
    shown = stack.cli("task", "status", task_id, repo=repo).stdout

    assert done["outcome"] == "approved", json.dumps(done)[-3000:]
    assert escalation_reasons(done) == ["no_change"]
    assert done["commit_id"] is None
    assert "commit" not in shown.split("\n", 1)[0] and "committed" not in json.dumps(done)
