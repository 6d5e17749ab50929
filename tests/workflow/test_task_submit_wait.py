"""``task submit --wait`` keeps waiting through slow or failed status queries (a loaded machine).

The status source is a plain function handed to the wait loop: it times out as a busy worker
does, then answers.
"""

from __future__ import annotations

import pytest

from semspec.client.task_client import StatusQueryTimeout
from semspec.client.task_follow import wait_for_end
from semspec.core.errors import NotFoundError
from semspec.workflow.task.messages import TaskStatus


def _running() -> TaskStatus:
    return TaskStatus("t1", "title", "developer", 1, 0, 3)


def _approved() -> TaskStatus:
    return TaskStatus("t1", "title", "done", 1, 0, 3, outcome="approved")


async def test_wait_goes_on_after_two_slow_queries_and_notes_each() -> None:
    answers: list[TaskStatus | Exception] = [
        _running(),
        StatusQueryTimeout("task t1 did not answer within 10s"),
        StatusQueryTimeout("task t1 did not answer within 10s"),
        _approved(),
    ]
    seen: list[TaskStatus] = []
    notes: list[str] = []

    async def fetch() -> TaskStatus:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    final = await wait_for_end(fetch, seen.append, notes.append, poll_s=0)
    assert final.outcome == "approved"
    assert [s.phase for s in seen] == ["developer", "done"]
    assert len(notes) == 2
    assert all("did not answer within 10s; still waiting" in n for n in notes)
    assert all("\n" not in n for n in notes)


async def test_wait_gives_up_after_the_bound_of_failures_in_a_row() -> None:
    calls = 0

    async def fetch() -> TaskStatus:
        nonlocal calls
        calls += 1
        raise StatusQueryTimeout("task t1 did not answer within 10s")

    with pytest.raises(StatusQueryTimeout):
        await wait_for_end(fetch, lambda _s: None, lambda _n: None, poll_s=0, max_failed=4)
    assert calls == 4


async def test_a_task_that_is_gone_ends_the_wait_at_once() -> None:
    calls = 0

    async def fetch() -> TaskStatus:
        nonlocal calls
        calls += 1
        raise NotFoundError("task", "t1")

    with pytest.raises(NotFoundError):
        await wait_for_end(fetch, lambda _s: None, lambda _n: None, poll_s=0)
    assert calls == 1
