"""``semspec monitor events``: the loop events the monitor stream holds, as JSON lines.

What it prints is what the task loop published, one event per line, oldest first, so a task's
steps can be saved and backtested: ``semspec monitor events T --kind step > run.steps.jsonl``
then ``semspec monitor replay run.steps.jsonl``. Reading stops at the last event stored when
the command started; events that do not parse (from another version) are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nats.errors
from pydantic import ValidationError

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.services.connect import resolve_endpoints, stack_nats
from semspec.vocabulary.events import event_from_json
from semspec.vocabulary.subjects import EVENT_KINDS, MONITOR_STREAM, MONITOR_SUBJECTS

IDLE_S = 2.0
"""How long a read waits for the next stored event before it counts the stream as read."""


@dataclass
class EventsRead:
    """What a read found."""

    printed: int = 0
    skipped: int = 0
    """Stored messages that are not valid loop events."""


async def print_stored_events(
    config: SemspecConfig,
    repo: Path,
    emit: Callable[[str], None],
    *,
    task: str | None,
    kind: str | None,
    limit: int,
) -> EventsRead:
    """Hand each stored event of ``task`` (all tasks when None) and ``kind`` to ``emit`` as one
    JSON line, oldest first, at most ``limit`` of them."""
    nc = await stack_nats(config, repo)
    read = EventsRead()
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info(MONITOR_STREAM)
        except nats.js.errors.NotFoundError as exc:
            raise ServiceError(
                f"stream {MONITOR_STREAM} does not exist yet",
                service="nats",
                address=resolve_endpoints(config, repo).nats_url,
                hint="no task has run on this stack; start one with `semspec task submit`",
            ) from exc
        last = info.state.last_seq
        if info.state.messages == 0:
            return read
        subject = MONITOR_SUBJECTS if kind is None else f"agent.monitor.{kind}"
        sub = await js.subscribe(subject, ordered_consumer=True)
        while read.printed < limit:
            try:
                msg = await sub.next_msg(timeout=IDLE_S)
            except nats.errors.TimeoutError:
                break
            try:
                event = event_from_json(msg.data)
            except ValidationError:
                read.skipped += 1
            else:
                if task is None or event.task_id == task:
                    emit(msg.data.decode("utf-8", "replace"))
                    read.printed += 1
            if msg.metadata.sequence.stream >= last:
                break
        await sub.unsubscribe()
    finally:
        await nc.close()
    return read


def check_kind(kind: str | None) -> str | None:
    """``kind`` when it is an event kind; else a ValueError naming the kinds."""
    if kind is not None and kind not in EVENT_KINDS:
        raise ValueError(f"--kind {kind!r} is not one of {', '.join(EVENT_KINDS)}")
    return kind
