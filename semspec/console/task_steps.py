"""A task's agent steps (each model call and tool call) from the events JetStream stored.

Step events (``agent.monitor.step``) do not name their task in their subject, so finding one
task's steps means reading the stream's step events and keeping that task's. The read is
bounded: only the newest ``MAX_SCANNED`` stream messages are looked at, at most ``MAX_ROWS``
steps are kept, and the read stops at the last event stored when it began. The page says when
a bound cut it. This is why steps have their own page rather than slowing the task page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import nats.errors
import nats.js.errors
from nats.js.api import ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from semspec.vocabulary.events import StepEvent, event_from_json
from semspec.vocabulary.subjects import MONITOR_STREAM, monitor_subject

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

MAX_SCANNED = 20_000
"""Newest stream messages (of every kind and task) a read looks at."""
MAX_ROWS = 2_000
"""Steps a page lists."""
IDLE_S = 1.0
"""How long a read waits for the next stored event before it takes the stream as read."""


@dataclass(frozen=True)
class StepRow:
    """One model or tool call of an agent of the task."""

    iteration: int
    role: str
    step: int
    kind: str
    tool: str | None
    model: str | None
    error: bool
    error_kind: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    duration_ms: float


@dataclass
class StepsRead:
    """The steps found, oldest first, and what bounded the read."""

    rows: list[StepRow] = field(default_factory=list)
    older_unread: bool = False
    """The stream holds older events than the read looked at."""
    rows_cut: bool = False
    """More steps matched than a page lists."""
    skipped: int = 0
    """Stored step messages that are not valid events (from another version)."""
    missing: bool = False
    """The stack has no event stream yet (no task ran)."""


async def task_steps(nc: NatsClient, task_id: str) -> StepsRead:
    """The stored steps of ``task_id`` among the stream's newest ``MAX_SCANNED`` messages."""
    js = nc.jetstream()
    read = StepsRead()
    try:
        info = await js.stream_info(MONITOR_STREAM)
    except nats.js.errors.NotFoundError:
        read.missing = True
        return read
    state = info.state
    if state.messages == 0:
        return read
    start = max(state.first_seq, state.last_seq - MAX_SCANNED + 1)
    read.older_unread = start > state.first_seq
    config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=start)
    sub = await js.subscribe(
        monitor_subject("step"), stream=MONITOR_STREAM, ordered_consumer=True, config=config
    )
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=IDLE_S)
            except nats.errors.TimeoutError:
                break
            _keep(read, msg.data, task_id)
            meta = msg.metadata
            if meta.num_pending == 0 or meta.sequence.stream >= state.last_seq:
                break
    finally:
        await sub.unsubscribe()
    return read


def _keep(read: StepsRead, raw: bytes, task_id: str) -> None:
    try:
        event = event_from_json(raw)
    except ValidationError:
        read.skipped += 1
        return
    if not isinstance(event, StepEvent) or event.task_id != task_id:
        return
    if len(read.rows) >= MAX_ROWS:
        read.rows_cut = True
        return
    data = event.data
    read.rows.append(
        StepRow(
            iteration=event.iteration,
            role=data.role,
            step=data.step,
            kind=data.kind,
            tool=data.tool,
            model=data.model,
            error=data.error,
            error_kind=data.error_kind,
            input_tokens=data.input_tokens,
            output_tokens=data.output_tokens,
            cost_usd=data.cost_usd,
            duration_ms=data.duration_ms,
        )
    )
