"""Waiting for something a test cannot be told about: poll, bounded, and fail naming what never
happened (a wait that runs out is a failure, never a quiet return)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(
    probe: Callable[[], object], what: str, timeout_s: float = 60.0, every_s: float = 0.05
) -> None:
    """Poll ``probe`` on the event loop until it holds; AssertionError after ``timeout_s``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not probe():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(every_s)


def wait_until(
    probe: Callable[[], object], what: str, timeout_s: float = 60.0, every_s: float = 0.2
) -> None:
    """Poll ``probe`` (blocking) until it holds; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(every_s)
