"""Scenario: dollars read one way everywhere (issue 30 item 2), for tasks run by LLM agents on
the fake OpenAI-compatible server: one whose model has no price in the registry, one whose model
is priced ($0.02 a call). ``task status``, ``usage`` and the console's board, task page and steps
page (served by the real ``semspec ui`` of each project) name the unpriced model and never show
``$0.0000``; the priced task shows its figure on the board as on its page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_task import approve_reply, developer_replies
from tests.scenarios.test_dollar_budget import CALL_USD, project, submit
from tests.support.console_ui import console_ui
from tests.support.scenario_tasks import EXIT_APPROVED, new_id
from tests.support.stack import Stack

UNPRICED = "unpriced (model fake-model)"


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer.for_roles() as server:
        yield server


def run_task(stack: Stack, llm: FakeLLMServer, name: str, priced: bool) -> tuple[Path, str]:
    repo = project(stack, llm, name, budget=None, priced=priced)
    llm.push(*developer_replies(), route="developer")
    llm.push(approve_reply(), route="reviewer")
    task_id = new_id(name)
    code, status = submit(stack, repo, task_id)
    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    return repo, task_id


def pages(repo: Path, task_id: str) -> dict[str, str]:
    """The board, the task page and the steps page, from ``semspec ui`` of ``repo``."""
    paths = {"board": "/", "task": f"/tasks/{task_id}", "steps": f"/tasks/{task_id}/steps"}
    with console_ui(repo) as console:
        return {name: console.http.get(path).text for name, path in paths.items()}


def board_cost(board: str, task_id: str) -> str:
    row = board[board.index(f'data-task-id="{task_id}"') :]
    found = re.search(r'<td data-field="cost">([^<]*)</td>', row[: row.index("</tr>")])
    assert found, row[:2000]
    return found.group(1)


def test_an_unpriced_model_is_named_on_every_surface_and_never_shown_as_zero_dollars(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo, task_id = run_task(stack, llm, "money-unpriced", priced=False)
    status = stack.cli("task", "status", task_id, repo=repo).stdout
    # Other tests' tasks share the stack: only this task's row of the usage table is its own.
    table = stack.cli("usage", "--wide", repo=repo).stdout
    usage = next(line for line in table.splitlines() if task_id in line)
    shown = pages(repo, task_id)
    assert board_cost(shown["board"], task_id) == UNPRICED
    assert f'<dd data-field="cost">{UNPRICED}' in shown["task"]
    assert UNPRICED in shown["steps"]
    assert UNPRICED in status and UNPRICED in usage
    for surface, text in {"status": status, "usage": usage, **shown}.items():
        assert "$0.0000" not in text, surface


def test_a_priced_task_shows_its_dollars_on_the_board_as_on_its_page(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo, task_id = run_task(stack, llm, "money-priced", priced=True)
    spent = f"${6 * CALL_USD:.4f}"
    shown = pages(repo, task_id)
    assert board_cost(shown["board"], task_id) == spent
    assert f'<dd data-field="cost">{spent}' in shown["task"]
    assert f"${CALL_USD:.4f}" in shown["steps"]
    assert spent in stack.cli("task", "status", task_id, repo=repo).stdout
