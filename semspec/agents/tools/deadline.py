"""Run one blocking tool call on a thread of its own, and stop waiting for it at a deadline.

A thread cannot be killed: past the deadline the caller gets ``TimeoutError`` and moves on while
the thread runs until the call returns (tools check a stop flag so that comes soon). Each call
gets its own daemon thread rather than a pool's, so a call that never returns holds no pool
slot other work needs and does not keep the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _settle(done: asyncio.Future[T], result: T | None, error: Exception | None) -> None:
    if done.done():
        return  # the caller stopped waiting (deadline or cancellation)
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)  # type: ignore[arg-type]  # result is a T when error is None


async def in_thread(call: Callable[[], T], timeout: float, name: str = "semspec-tool") -> T:
    """``call()`` on a new daemon thread; ``TimeoutError`` once ``timeout`` seconds pass."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def target() -> None:
        result: T | None = None
        error: Exception | None = None
        try:
            result = context.run(call)
        except Exception as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle, done, result, error)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await asyncio.wait_for(done, timeout)
