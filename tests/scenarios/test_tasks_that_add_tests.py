"""Scenario: a task changes a module and adds a test file for it; that is not scope creep.

Once with the new test file named in the task (a path that does not exist yet), once with the
developer adding it unasked in the usual test location. Either way the task is approved with
the test committed, the risk monitor raises no scope-creep signal and nobody is asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mdurl_project import (
    ADDED_TEST,
    FORMAT_PY,
    make_project,
    project_config,
    with_new_function,
)
from tests.support.monitor_probe import signals_for, wait_until_monitor_idle
from tests.support.scenario_tasks import (
    APPROVE,
    EXIT_APPROVED,
    entries,
    file_at,
    new_id,
    submit,
)
from tests.support.stack import Stack

NEW_TEST = "tests/test_format_without_hash.py"
WITH_TEST = [
    {
        "developer": {"write": {FORMAT_PY: with_new_function(), NEW_TEST: ADDED_TEST}},
        "reviewer": APPROVE,
    }
]


@pytest.fixture(scope="module")
def project(stack: Stack) -> Iterator[Path]:
    yield make_project(stack, "tests-added", project_config(stack, "tests-added"))


def assert_approved_without_scope_creep(
    stack: Stack, repo: Path, code: int, status: dict[str, object]
) -> None:
    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert status["outcome"] == "approved"
    commit = str(status["commit_id"])
    assert file_at(repo, commit, NEW_TEST) == ADDED_TEST
    assert file_at(repo, commit, FORMAT_PY) == with_new_function()
    assert entries(status, "escalation") == []  # type: ignore[arg-type]
    assert status["flags"] == []
    wait_until_monitor_idle(stack.nats_url())
    reasons = [s["reason"] for s in signals_for(stack.nats_url(), str(status["task_id"]))]
    assert "scope_creep" not in reasons


def test_a_task_naming_a_test_file_it_will_create_is_approved_without_scope_creep(
    stack: Stack, project: Path
) -> None:
    assert not (project / NEW_TEST).exists()
    code, status = submit(stack, project, new_id("named-test"), [FORMAT_PY, NEW_TEST], WITH_TEST)
    assert_approved_without_scope_creep(stack, project, code, status)
    assert status["task_files"] == sorted([FORMAT_PY, NEW_TEST])


def test_a_test_file_added_next_to_the_changed_code_is_approved_without_scope_creep(
    stack: Stack, project: Path
) -> None:
    code, status = submit(stack, project, new_id("added-test"), [FORMAT_PY], WITH_TEST)
    assert_approved_without_scope_creep(stack, project, code, status)
