"""Ending a gate's whole process group: the shell, its children and their children."""

from __future__ import annotations

import asyncio
import os
import signal

# How long processes get to exit on SIGTERM before SIGKILL.
TERM_GRACE_S = 2.0
_POLL_S = 0.05


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group (0 only probes); False when no process of the group is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member changed its credentials; the rest still got nothing, so treat as gone.
        return False
    return True


async def end_group(pgid: int, grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM every process in group ``pgid``, then SIGKILL whatever is left after ``grace_s``.

    Zombies still count as members until their parent reaps them, so the wait is bounded by
    ``grace_s`` rather than by the group becoming empty; SIGKILL on a zombie is harmless.
    """
    if not _signal_group(pgid, signal.SIGTERM):
        return
    # A stopped process acts on SIGTERM only once continued.
    _signal_group(pgid, signal.SIGCONT)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while loop.time() < deadline:
        await asyncio.sleep(_POLL_S)
        if not _signal_group(pgid, 0):
            return
    _signal_group(pgid, signal.SIGKILL)
