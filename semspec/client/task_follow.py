"""The wait loop of ``task submit --wait``: poll a task's status until it ends or escalates.

A status query can be slow or fail for a while on a loaded machine (the worker busy with a
gate, or replaced); that is no reason to give up on a task that is still running. The loop
asks again, says so once per slow query on stderr, and gives up only after
``MAX_FAILED_QUERIES`` failures in a row or when the task is gone (``NotFoundError``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from temporalio.service import RPCError

from semspec.core.errors import InputError, SemspecError

if TYPE_CHECKING:
    from semspec.workflow.task.messages import TaskStatus

POLL_S = 0.3
MAX_BACKOFF_S = 5.0
MAX_FAILED_QUERIES = 30
"""Failed status queries in a row before ``--wait`` gives up: with the 10 s query timeout
(``task_client.QUERY_TIMEOUT_S``) about five minutes of a task that cannot be asked."""


async def wait_for_end(
    fetch: Callable[[], Awaitable[TaskStatus]],
    on_status: Callable[[TaskStatus], None],
    note: Callable[[str], None],
    *,
    poll_s: float = POLL_S,
    max_failed: int = MAX_FAILED_QUERIES,
) -> TaskStatus:
    """Call ``fetch`` until the status is done or escalated (or has an outcome); each status
    goes to ``on_status``. A failed query is noted with ``note`` and asked again; an input
    error (the task is gone) and the ``max_failed``-th failure in a row are raised."""
    failed = 0
    while True:
        try:
            status = await fetch()
        except InputError:
            raise  # not found: nothing to wait for
        except (SemspecError, RPCError) as err:
            failed += 1
            if failed >= max_failed:
                raise
            note(f"note: {err}; still waiting ({failed} slow or failed queries in a row)")
            # Backing off: a stack that fails fast (Temporal restarting) is given time too.
            await asyncio.sleep(min(poll_s * 2**failed, MAX_BACKOFF_S))
            continue
        failed = 0
        on_status(status)
        if status.phase in ("done", "escalated") or status.outcome:
            return status
        await asyncio.sleep(poll_s)
