"""What the monitor page shows, read from JetStream: the stored signals (by level and by rule),
the risk monitor's consumer lag and the dead letters, as ``semspec monitor watch``,
``semspec status --json`` and the dead-letter stream hold them."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nats.js.errors import NotFoundError
from pydantic import ValidationError

from semspec.processors.risk_monitor.deadletter import ERROR_HEADER, ORIGINAL_SUBJECT_HEADER
from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.streams import CONSUMER
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    MONITOR_STREAM,
    SIGNAL_LEVELS,
    SIGNAL_STREAM,
    SIGNAL_SUBJECTS,
    signal_subject,
)

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.api import RawStreamMsg, StreamState

RECENT_SIGNALS = 200
"""Stored signals the page reads (newest): its stream and its counts by rule."""
RECENT_DEAD_LETTERS = 20
READ_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RuleHits:
    """How often one rule (a signal's ``reason``) fired among the recent signals, by level."""

    rule: str
    levels: dict[str, int]
    total: int


@dataclass(frozen=True)
class ConsumerLag:
    """The risk monitor's durable consumer on the loop events."""

    pending: int
    """Events stored that the monitor has not been handed yet."""
    unacknowledged: int
    """Events handed to the monitor and not yet acknowledged."""
    redelivered: int
    delivered: int
    """The stream sequence of the last event handed over."""


@dataclass(frozen=True)
class DeadLetter:
    """A loop event the monitor could not use."""

    sequence: int
    at: str
    subject: str
    error: str


@dataclass
class MonitorView:
    """Everything the monitor page shows; ``problems`` says what could not be read."""

    signals: list[UserSignal] = field(default_factory=list)
    """The newest stored signals, newest first."""
    by_level: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIGNAL_LEVELS, 0))
    """Every stored signal, by level."""
    rules: list[RuleHits] = field(default_factory=list)
    lag: ConsumerLag | None = None
    events_stored: int = 0
    dead_letter_count: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stalled: str | None = None
    """When loop events are not being consumed (``risk.leader.stall_s``, ADR 0005): how many
    wait, for how long, and when the last ack was; the page shows it as a banner."""


async def monitor_view(js: JetStreamContext, stall_s: float | None = None) -> MonitorView:
    """Read the page's data; each part that cannot be read is named in ``problems``. Given
    ``stall_s``, also whether events wait unconsumed for that long (``stalled``)."""
    view = MonitorView()
    parts = [_signals(js, view), _lag(js, view), _dead_letters(js, view)]
    if stall_s is not None:
        parts.append(_stall(js, view, stall_s))
    await asyncio.gather(*parts)
    return view


async def _stall(js: JetStreamContext, view: MonitorView, stall_s: float) -> None:
    from nats.errors import Error as NatsError

    from semspec.processors.risk_monitor.watchdog import consumer_progress

    try:
        progress = await consumer_progress(js)
    except NatsError:
        return  # no consumer yet, or no answer: ``_lag`` names the problem
    if progress.stalled(stall_s):
        view.stalled = f"{progress.describe()} (risk.leader.stall_s: {stall_s:g})"


async def _signals(js: JetStreamContext, view: MonitorView) -> None:
    try:
        info = await js.stream_info(SIGNAL_STREAM, subjects_filter=SIGNAL_SUBJECTS)
    except NotFoundError:
        view.problems.append(f"stream {SIGNAL_STREAM} does not exist yet (no monitor ran)")
        return
    stored = info.state.subjects or {}
    view.by_level = {level: stored.get(signal_subject(level), 0) for level in SIGNAL_LEVELS}
    view.signals = await newest_signals(js, info.state, RECENT_SIGNALS)
    hits: dict[str, Counter[str]] = {}
    for signal in view.signals:
        hits.setdefault(signal.reason, Counter())[signal.level] += 1
    view.rules = sorted(
        (RuleHits(rule, dict(levels), sum(levels.values())) for rule, levels in hits.items()),
        key=lambda hit: (-hit.total, hit.rule),
    )


async def latest_signal_by_task(js: JetStreamContext) -> dict[str, UserSignal]:
    """The newest stored signal of each task among the newest ``RECENT_SIGNALS``."""
    try:
        info = await js.stream_info(SIGNAL_STREAM)
    except NotFoundError:
        return {}
    latest: dict[str, UserSignal] = {}
    for signal in await newest_signals(js, info.state, RECENT_SIGNALS):
        latest.setdefault(signal.task_id, signal)
    return latest


async def newest_signals(js: JetStreamContext, stored: StreamState, count: int) -> list[UserSignal]:
    """Up to ``count`` of the newest signals the stream holds, newest first; what does not
    parse (another version's) is left out."""
    found = []
    for message in await _newest(js, SIGNAL_STREAM, stored.first_seq, stored.last_seq, count):
        try:
            found.append(UserSignal.from_json(message.data or b""))
        except ValidationError:
            continue
    return found


async def _lag(js: JetStreamContext, view: MonitorView) -> None:
    try:
        stream = await js.stream_info(MONITOR_STREAM)
        info = await js.consumer_info(MONITOR_STREAM, CONSUMER)
    except NotFoundError:
        view.problems.append(f"the risk monitor's consumer on {MONITOR_STREAM} does not exist yet")
        return
    view.events_stored = stream.state.messages
    view.lag = ConsumerLag(
        pending=info.num_pending or 0,
        unacknowledged=info.num_ack_pending or 0,
        redelivered=info.num_redelivered or 0,
        delivered=info.delivered.stream_seq if info.delivered else 0,
    )


async def _dead_letters(js: JetStreamContext, view: MonitorView) -> None:
    try:
        info = await js.stream_info(DEAD_LETTER_STREAM)
    except NotFoundError:
        return  # created with the monitor's streams; none yet means none
    view.dead_letter_count = info.state.messages
    messages = await _newest(
        js, DEAD_LETTER_STREAM, info.state.first_seq, info.state.last_seq, RECENT_DEAD_LETTERS
    )
    for message in messages:
        headers = message.headers or {}
        view.dead_letters.append(
            DeadLetter(
                sequence=message.seq or 0,
                at=message.time.isoformat(timespec="seconds") if message.time else "",
                subject=str(headers.get(ORIGINAL_SUBJECT_HEADER, "")),
                error=str(headers.get(ERROR_HEADER, "")),
            )
        )


async def _newest(
    js: JetStreamContext, stream: str, first: int, last: int, count: int
) -> list[RawStreamMsg]:
    """Up to ``count`` of the stream's newest messages, newest first (deleted ones skipped)."""
    if last < first or last == 0:
        return []

    async def one(seq: int) -> RawStreamMsg | None:
        try:
            return await asyncio.wait_for(js.get_msg(stream, seq), READ_TIMEOUT_S)
        except (NotFoundError, TimeoutError):
            return None

    wanted = range(last, max(first, last - count + 1) - 1, -1)
    found = await asyncio.gather(*(one(seq) for seq in wanted))
    return [message for message in found if message is not None]
