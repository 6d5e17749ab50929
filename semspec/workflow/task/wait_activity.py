"""``task.wait_for_tasks``: poll until earlier tasks on the same files are out of the way.

One call polls Temporal and git every ``poll_s`` seconds, heartbeating each time, and returns as
soon as the set of tasks still holding changes (so the status shows it) or after ``for_s``
seconds, so that it holds one of the worker's activity slots only that long (the workflow
spaces later calls with a durable timer, ``loop/waiting.py``). A cancelled task cancels it at
its next heartbeat. Each answer comes from ``waited_tasks``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity

from semspec.workflow.task.waited_tasks import waited_state

POLL_S = 2.0
"""Seconds between two looks at the tasks waited for."""
CALL_S = 30.0
"""Seconds one call polls before it returns to the workflow with nothing changed."""


@dataclass(frozen=True)
class WaitInput:
    """The tasks still waited for, and the repository and base branch they must land on."""

    task_ids: list[str]
    repo_path: str
    base_branch: str
    poll_s: float = POLL_S
    for_s: float = CALL_S
    plan_id: str = ""
    """The waiting task's plan: its tasks not started yet hold (``waited_tasks``)."""


@dataclass(frozen=True)
class WaitCheck:
    """What the call found: the tasks that still hold, and how each of the others ended."""

    waiting_on: list[str]
    ended: list[str] = field(default_factory=list)
    """One line per task no longer waited for, e.g. ``t-1 landed on main``."""
    holding: dict[str, str] = field(default_factory=dict)
    """Why each task still holds (``running``, ``approved, not landed yet``)."""


@activity.defn(name="task.wait_for_tasks")
async def wait_for_tasks(inp: WaitInput) -> WaitCheck:
    """Poll until the tasks that hold change, none hold, or ``for_s`` has passed."""
    client = activity.client()
    repo = Path(inp.repo_path)
    started = time.monotonic()
    while True:
        states = [
            await waited_state(client, t, repo, inp.base_branch, inp.plan_id) for t in inp.task_ids
        ]
        holding = {s.task_id: s.note for s in states if not s.done}
        ended = [f"{s.task_id} {s.note}" for s in states if s.done]
        if ended or time.monotonic() - started >= inp.for_s:
            return WaitCheck([t for t in inp.task_ids if t in holding], ended, holding)
        activity.heartbeat(holding)
        await asyncio.sleep(inp.poll_s)
