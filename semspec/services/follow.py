"""A process of the stack follows the stack's services when ``semspec up`` moves them.

A worker started by hand kept the NATS address it read at start after ``up`` had started NATS
elsewhere, and went on taking activities whose publishes failed (issue 26: 145 errors in two
minutes). ``follow_moves`` serves at the addresses the run folder names now, re-reads them
every ``MOVED_CHECK_S`` and, when one changed, ends that serving (as on SIGTERM: the work in
hand finishes or goes back to Temporal) and serves again at the new ones. Addresses given in
the config are external and never move; a run folder without records (``semspec down``) is
no move. The monitor follows the same way (``monitor_runner.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import SemspecError
from semspec.core.logging import get_logger
from semspec.services.connect import Endpoints, resolve_endpoints

MOVED_CHECK_S = 2.0
"""How often the run folder is re-read for the services' addresses."""

Serve = Callable[[Endpoints, asyncio.Event], Awaitable[None]]
"""Serves at the given endpoints until the event is set."""


async def follow_moves(
    config: SemspecConfig, repo: Path, stop: asyncio.Event, serve: Serve, role: str
) -> None:
    """Run ``serve`` at the stack's current endpoints until ``stop``; again, at the new ones,
    each time the run folder names other addresses."""
    while not stop.is_set():
        endpoints = await asyncio.to_thread(resolve_endpoints, config, repo)
        ending = asyncio.Event()
        moved: dict[str, str] = {}
        helpers = [
            asyncio.create_task(relay(stop, ending)),
            asyncio.create_task(watch_moves(config, repo, endpoints.addresses(), moved, ending)),
        ]
        try:
            await serve(endpoints, ending)
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
        if not moved:
            return
        get_logger(role).warning("the stack's services moved: following them", **moved)


async def relay(source: asyncio.Event, target: asyncio.Event) -> None:
    """Set ``target`` once ``source`` is set."""
    await source.wait()
    target.set()


async def watch_moves(
    config: SemspecConfig,
    repo: Path,
    used: dict[str, str],
    moved: dict[str, str],
    ending: asyncio.Event,
) -> None:
    """Every ``MOVED_CHECK_S``, compare the recorded addresses with ``used``; on a change,
    note it in ``moved`` and set ``ending``. A run folder without records (``semspec down``) is
    no move: the process keeps trying the old address."""
    while not ending.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ending.wait(), MOVED_CHECK_S)
            return
        try:
            now = (await asyncio.to_thread(resolve_endpoints, config, repo)).addresses()
        except SemspecError:
            continue
        changed = {k: f"{v} -> {now[k]}" for k, v in used.items() if now.get(k, v) != v}
        if changed:
            moved.update(changed)
            ending.set()
