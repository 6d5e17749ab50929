"""Scenario: ``task list``, ``escalations list`` and the console's board read every row from
Temporal's visibility (the memo each task keeps), so they answer in full with the worker stopped,
when no task could answer a status query (issue 31).

On a stack of its own (so the lists hold exactly this module's tasks): one task approved, one
escalated (two failed attempts, ``max_retries`` 1), then the worker is stopped and a third task
is submitted, which stays ``starting``. Every list is read after that.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from temporalio.client import Client

from semspec.console.board_rows import board_page
from semspec.core.errors import InputError
from tests.support.console_ui import console_ui
from tests.support.stack import Stack, check_gate, running_stack, sample_config

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}
EXIT_ESCALATED = 3


@dataclass(frozen=True)
class Tasks:
    """The module's three tasks, oldest first, on a stack whose worker is stopped."""

    stack: Stack
    approved: str
    escalated: str
    running: str


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tasks]:
    with running_stack(tmp_path_factory.mktemp("lists"), sample_config([check_gate()])) as stack:
        approved, escalated, running = (f"lists-{uuid.uuid4().hex[:8]}" for _ in range(3))
        done = stack.submit_scripted(
            approved,
            [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}],
            "--wait",
            "--json",
        )
        assert done.returncode == 0, done.stderr
        broken = [
            {"developer": {"write": {"calc.py": BROKEN}}},
            {"developer": {"write": {"calc.py": BROKEN + "# again\n"}}},
        ]
        done = stack.submit_scripted(escalated, broken, "--wait", "--json")
        assert done.returncode == EXIT_ESCALATED, done.stderr
        # No worker from here on: a status query could not be answered by any task.
        stack.kill("worker")
        done = stack.submit_scripted(running, [{"developer": {"write": {"calc.py": GOOD}}}])
        assert done.returncode == 0, done.stderr
        yield Tasks(stack, approved, escalated, running)


def test_task_list_shows_every_state_with_no_worker_running(tasks: Tasks) -> None:
    rows = tasks.stack.cli_json("task", "list", "--all")
    by_id = {row["task_id"]: row for row in rows}
    assert [row["task_id"] for row in rows] == [tasks.running, tasks.escalated, tasks.approved]
    assert (by_id[tasks.approved]["state"], by_id[tasks.approved]["phase"]) == (
        "completed",
        "approved",
    )
    assert (by_id[tasks.escalated]["state"], by_id[tasks.escalated]["phase"]) == (
        "escalated",
        "escalated",
    )
    assert by_id[tasks.escalated]["iteration"] == 2
    assert (by_id[tasks.running]["state"], by_id[tasks.running]["phase"]) == ("running", "starting")
    assert by_id[tasks.running]["title"] == f"task {tasks.running}"
    # The JSON rows keep their fields.
    assert set(rows[0]) == {
        "task_id", "state", "title", "phase", "iteration", "started", "land", "waiting_on"
    }  # fmt: skip
    # Where approved work is on its way to main: no land ran, so approved, not landed.
    assert by_id[tasks.approved]["land"] == {"state": "approved"}
    assert by_id[tasks.running]["land"] is None


def test_task_list_limit_shows_the_newest_and_says_there_are_more(tasks: Tasks) -> None:
    done = tasks.stack.cli("task", "list", "--limit", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert [row["task_id"] for row in json.loads(done.stdout)] == [tasks.running, tasks.escalated]
    assert "the newest 2 tasks; see more with --limit N or --all" in done.stderr
    done = tasks.stack.cli("task", "list", "--limit", "3")
    assert done.returncode == 0, done.stderr
    assert all(task in done.stdout for task in (tasks.approved, tasks.escalated, tasks.running))
    assert "see more" not in done.stderr


def test_task_list_says_one_task_in_the_singular_and_refuses_limit_with_all(tasks: Tasks) -> None:
    done = tasks.stack.cli("task", "list", "--limit", "1")
    assert done.returncode == 0, done.stderr
    assert "the newest 1 task; see more with --limit N or --all" in done.stderr
    both = tasks.stack.cli("task", "list", "--limit", "2", "--all")
    assert both.returncode == 2
    assert "error: --limit and --all" in both.stderr and "hint: give one" in both.stderr


def test_task_list_with_no_match_says_so_and_json_stays_a_list(tasks: Tasks) -> None:
    done = tasks.stack.cli("task", "list", "--state", "aborted")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no task matches --state aborted"
    assert tasks.stack.cli_json("task", "list", "--state", "aborted") == []


def test_task_list_state_filter_reads_the_memo(tasks: Tasks) -> None:
    escalated = tasks.stack.cli_json("task", "list", "--state", "escalated")
    assert [row["task_id"] for row in escalated] == [tasks.escalated]
    approved = tasks.stack.cli_json("task", "list", "--state", "approved", "--limit", "1")
    assert [row["task_id"] for row in approved] == [tasks.approved]


def test_escalations_list_shows_the_question_with_no_worker_running(tasks: Tasks) -> None:
    [pending] = tasks.stack.cli_json("escalations", "list")
    assert pending["task_id"] == tasks.escalated
    assert pending["escalation_id"] == f"{tasks.escalated}-1"
    assert pending["reason"] == "budget_exhausted"
    assert pending["message"]


def test_the_board_rows_come_from_visibility_with_no_worker_running(tasks: Tasks) -> None:
    board = _board_html(tasks.stack)
    assert _row(board, tasks.approved)["state"] == "approved"
    escalated = _row(board, tasks.escalated)
    assert escalated["state"] == "escalated"
    assert escalated["retries"] == "1/1"
    assert _row(board, tasks.running) == {
        "state": "running",
        "phase": "starting",
        "iteration": "0",
        "retries": "0/1",
    }


async def test_the_board_reads_its_rows_a_page_at_a_time(tasks: Tasks) -> None:
    client = await Client.connect(tasks.stack.temporal_address())
    first = await board_page(client, limit=2)
    assert [row.task_id for row in first.rows] == [tasks.running, tasks.escalated]
    assert first.after
    second = await board_page(client, limit=2, after=first.after)
    assert [row.task_id for row in second.rows] == [tasks.approved]
    assert second.after == ""
    with pytest.raises(InputError, match="page token"):
        await board_page(client, limit=2, after="not base64!")


def _row(html: str, task_id: str) -> dict[str, str]:
    """A board row's section and its phase, iteration and retries cells."""
    found = re.search(f'data-task-id="{task_id}" data-state="([a-z]+)"(.*?)</tr>', html, re.S)
    assert found, f"{task_id} is not on the board"
    cells = dict(re.findall(r'<td data-field="(phase|iteration|retries)">([^<]*)</td>', found[2]))
    return {"state": found[1], **cells}


def _board_html(stack: Stack) -> str:
    """The board (``/``) of ``semspec ui --port 0``, logged in with the token its URL carries."""
    with console_ui(stack.repo) as console:
        board = console.http.get("/")  # the board is the front page
        assert board.status_code == 200, board.text[-2000:]
        return board.text
