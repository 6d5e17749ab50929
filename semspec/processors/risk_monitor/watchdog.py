"""Whether loop events are being consumed: the durable consumer's progress as the server sees it.

A lease that some monitor renews says nothing about whether that monitor consumes (issue 26: a
monitor renewed a lease it had stepped down from, and nobody consumed for minutes). The
consumer's own figures do: how many events wait, how long the oldest has waited, and when the
ack floor last moved. Every standby and ``semspec status`` read them (ADR 0005); "events are not
being consumed" is events waiting for longer than ``risk.leader.stall_s`` while nothing was
acknowledged for as long.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from semspec.processors.risk_monitor.lease import Lease, LeaseHolder
from semspec.vocabulary.streams import CONSUMER
from semspec.vocabulary.subjects import MONITOR_STREAM, MONITOR_SUBJECTS


@dataclass(frozen=True)
class ConsumerProgress:
    """The monitor consumer's progress at one moment."""

    waiting: int
    """Events not acknowledged yet: not delivered, plus delivered and unacknowledged."""
    oldest_s: float | None
    """Seconds since the stream stored the oldest of them; None when none wait (or unknown)."""
    last_ack_s: float | None
    """Seconds since the consumer's ack floor last moved; None when it never has."""

    def stalled(self, after_s: float) -> bool:
        """Events have waited longer than ``after_s`` and nothing was acknowledged for as long."""
        if self.waiting == 0 or self.oldest_s is None or self.oldest_s <= after_s:
            return False
        return self.last_ack_s is None or self.last_ack_s > after_s

    def describe(self) -> str:
        """``12 events waiting, the oldest for 45 s, last ack 50 s ago``."""
        oldest = "" if self.oldest_s is None else f", the oldest for {self.oldest_s:.0f} s"
        ack = "never" if self.last_ack_s is None else f"{self.last_ack_s:.0f} s ago"
        return f"{self.waiting} events waiting{oldest}, last ack {ack}"


async def consumer_progress(js: JetStreamContext, consumer: str = CONSUMER) -> ConsumerProgress:
    """Read the consumer's progress (``nats.errors.Error`` when JetStream does not answer).

    Ages are the server's timestamps against this machine's clock, so they are off by the
    clocks' difference; ``stall_s`` is tens of seconds, far above a synchronised clock's error.
    """
    info = await js.consumer_info(MONITOR_STREAM, consumer)
    now = datetime.now(UTC)
    floor = info.ack_floor
    last_ack = floor.last_active if floor is not None else None
    last_ack_s = (now - last_ack).total_seconds() if last_ack is not None else None
    waiting = (info.num_pending or 0) + (info.num_ack_pending or 0)
    oldest_s = None
    if waiting:
        first = (floor.stream_seq if floor is not None else 0) + 1
        with contextlib.suppress(NatsError):  # e.g. aged out meanwhile: age unknown this time
            msg = await js.get_msg(MONITOR_STREAM, first, subject=MONITOR_SUBJECTS, next=True)
            if msg.time is not None:
                oldest_s = (now - msg.time).total_seconds()
    return ConsumerProgress(waiting, oldest_s, last_ack_s)


@dataclass(frozen=True)
class Stall:
    """A lease holder under which events are not being consumed."""

    holder: LeaseHolder
    progress: ConsumerProgress


class StandbyWatch:
    """A standby's watchdog: the lease's holder, and the consumer's progress once that holder
    has held the lease for ``stall_s`` as this standby saw it (a holder that just took over
    gets the time to catch up before it can be judged)."""

    def __init__(self, lease: Lease, js: JetStreamContext, stall_s: float, consumer: str) -> None:
        self._lease = lease
        self._js = js
        self._stall_s = stall_s
        self._consumer = consumer
        self._seen: tuple[str, float] | None = None

    async def stalled(self) -> Stall | None:
        """The holder to take the lease from, or None (nobody holds it, it has not held it for
        ``stall_s`` yet, events are consumed, or JetStream does not answer)."""
        try:
            holder = await self._lease.current()
            if holder is None:
                self._seen = None
                return None
            now = time.monotonic()
            if self._seen is None or self._seen[0] != holder.token:
                self._seen = (holder.token, now)
            if now - self._seen[1] < self._stall_s:
                return None
            progress = await consumer_progress(self._js, self._consumer)
        except NatsError:
            return None
        return Stall(holder, progress) if progress.stalled(self._stall_s) else None
