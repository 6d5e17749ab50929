"""``watch``: print user signals (``user.signal.>``) as they arrive, for people or scripts."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from semspec.core.errors import ServiceError
from semspec.core.nats_connect import connect_nats
from semspec.vocabulary.events import UserSignal, validation_summary
from semspec.vocabulary.subjects import SIGNAL_STREAM, SIGNAL_SUBJECTS

_STYLE = {"warn": "yellow", "pause": "magenta", "halt": "red", "escalate": "bold red"}


def watch_signals(
    nats_url: str,
    options: dict[str, Any],
    console: Console,
    as_json: bool,
    *,
    count: int | None = None,
) -> int:
    """Print new user signals until SIGINT/SIGTERM (or ``count`` of them); returns how many.

    With ``as_json`` each signal is one JSON object per line.
    """
    return asyncio.run(_watch(nats_url, options, console, as_json, count))


async def _watch(
    nats_url: str, options: dict[str, Any], console: Console, as_json: bool, count: int | None
) -> int:
    nc = await connect_nats(nats_url, options, "semspec-watch")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    seen = 0
    try:
        js = nc.jetstream()
        try:
            await js.stream_info(SIGNAL_STREAM)
        except NotFoundError as exc:
            raise ServiceError(
                f"stream {SIGNAL_STREAM} does not exist yet",
                service="nats",
                address=nats_url,
                hint="start the risk monitor (`semspec up` or `semspec monitor`) first",
            ) from exc
        # Ordered and ephemeral: a watcher reads from now on and leaves nothing behind.
        sub = await js.subscribe(
            SIGNAL_SUBJECTS,
            stream=SIGNAL_STREAM,  # it stores signals under this subject, but takes them elsewhere
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.NEW,
        )
        while not stop.is_set() and (count is None or seen < count):
            try:
                msg = await sub.next_msg(timeout=0.5)
            except TimeoutError:
                continue
            try:
                user_signal = UserSignal.from_json(msg.data)
            except ValidationError as exc:
                why = validation_summary(exc)
                console.print(
                    f"unreadable signal on {escape(msg.subject)}: {escape(why)}", style="dim"
                )
                continue
            seen += 1
            show_signal(console, user_signal, as_json)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await nc.close()
    return seen


def show_signal(console: Console, user_signal: UserSignal, as_json: bool) -> None:
    """Print one signal: level, task, reason, message and the commands to run next."""
    if as_json:
        console.file.write(user_signal.model_dump_json() + "\n")
        console.file.flush()
        return
    style = _STYLE.get(user_signal.level, "")
    console.print(
        f"[{style}]{user_signal.level.upper():8}[/] task {escape(user_signal.task_id)}  "
        f"{escape(user_signal.reason)}  {escape(user_signal.message)}"
    )
    for action in user_signal.suggested_actions:
        console.print(f"    {escape(action.description)}: {action.command}", markup=False)
