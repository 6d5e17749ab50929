"""The wait before a task starts work: earlier tasks on the same files finish and land first.

A task whose declared files overlap those of a task submitted before it and not yet out of the
way carries that task's id in ``TaskInput.wait_for`` (chosen at submit). Before its workspace is
made it shows phase ``waiting`` and ``waiting_on``, and asks ``task.wait_for_tasks`` again and
again until every such task has ended without approval or landed on the base branch; its
worktree is then made from the base as it is, on top of the landed work. So two tasks that were
known to collide never run side by side into the monitor's conflict halt (docs/landing.md,
"Waiting for overlapping tasks"; docs/risk-monitor.md).

A waiting task runs no agent and publishes no loop event, so the monitor knows nothing of its
files until it starts. The wait costs no dollars and has no bound of its own: it lasts until
the tasks land or end, or ``semspec task cancel`` ends it (the activity at its next heartbeat,
a timer at once). For its first ``FAST_CALLS`` calls (about ten minutes) it polls without a
break, so work that lands soon is seen within seconds; then a durable timer of ``SLOW_PAUSE``
separates the calls, so a wait of days holds a worker's activity slot a fifth of the time and
grows the history by about 6,500 events a day (Temporal refuses a history past 51,200).

Only a first run with ``wait_for`` set runs this, so histories recorded before it replay
unchanged. Call only from the workflow.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from semspec.workflow.task.loop.calls import ActivityCalls
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import TaskInput
from semspec.workflow.task.wait_activity import CALL_S, WaitInput, wait_for_tasks

CALL_TIMEOUT = timedelta(seconds=CALL_S + 120)
"""One polling call's start-to-close bound: its polling time and room for a slow answer."""
FAST_CALLS = 20
"""Calls made back to back before the timer spaces them."""
SLOW_PAUSE = timedelta(seconds=120)
"""The durable timer between two calls after the first ``FAST_CALLS``."""


async def wait_for_earlier_tasks(inp: TaskInput, state: TaskState, calls: ActivityCalls) -> None:
    """Return once no task in ``inp.wait_for`` holds this one back (at once when none does)."""
    waiting = list(inp.wait_for)
    if not waiting or inp.continuation is not None:
        return
    state.waiting(waiting)
    state.log("waiting", f"waiting on {', '.join(waiting)}: they declared the same files")
    calls_made = 0
    while waiting:
        if calls_made >= FAST_CALLS:
            await workflow.sleep(SLOW_PAUSE)
        calls_made += 1
        check = await calls.start(
            wait_for_tasks,
            WaitInput(
                waiting, inp.spec.repo_path, inp.spec.base_branch, plan_id=inp.spec.plan_id or ""
            ),
            CALL_TIMEOUT,
            heartbeat=True,
        )
        for line in check.ended:
            state.log("waiting", f"no longer waiting on {line}")
        waiting = list(check.waiting_on)
        state.waiting(waiting)
    state.log("waiting", f"going on from {inp.spec.base_branch} as it is now")
