"""Publish loop events to JetStream, one bounded attempt at a time.

Each event carries a ``Nats-Msg-Id`` derived from the workflow run, iteration and kind, so a
retried publish sends the same id and JetStream drops the duplicate. ``deliver`` makes one
attempt (connect, publish, wait for the ack), bounded by ``attempt_s``, and raises
``ServiceError`` when NATS does not acknowledge: the task workflow's outbox retries it through
Temporal for as long as the outage lasts (``outbox.py``), so no event is dropped.

Events and signals are validated against their models before they are sent (``build``). One
that fails is a bug in the code that built it: it is refused, logged at error level with the
fields at fault and counted (``refused``), and the loop goes on without it. Failing the
activity instead would make Temporal retry the same bad payload forever.

``publish_now`` is the short path of the events an activity makes (``files``, ``gate``,
``context``, ``review``): the activity sends them itself before it returns, so they do not wait
for the workflow task that takes its result and the outbox call after it (issue 26). It never
raises and never retries: what it did not store goes to the workflow's outbox with the step's
result. After any failed publish this worker leaves events to the outboxes for ``quiet_s``, so
the events an outage held back go out before later ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NatsClient
from pydantic import ValidationError

from semspec.core.config.models import RiskConfig
from semspec.core.errors import ServiceError
from semspec.core.logging import get_logger
from semspec.core.nats_connect import connect_nats
from semspec.vocabulary.events import MonitorEvent, UserSignal, validation_summary
from semspec.vocabulary.streams import ensure_streams
from semspec.vocabulary.subjects import monitor_subject, signal_intake_subject

log = get_logger("publisher")


@dataclass
class EventPublisher:
    """A lazily connected JetStream publisher; each publish is one bounded attempt."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)
    attempt_s: float = 5.0
    """Bound of one attempt (connect if needed, publish, ack): a reconnecting client would
    otherwise wait for NATS forever."""
    risk: RiskConfig = field(default_factory=RiskConfig)
    """Limits of the streams it creates when missing (the monitor updates existing ones)."""
    replicas: int = 1
    """Replicas of the streams it creates when missing (``services.nats.replicas``)."""
    now_s: float = 2.0
    """Bound of a ``publish_now`` (an activity waits this long at most before it returns)."""
    quiet_s: float = 30.0
    """How long after a failed publish ``publish_now`` sends nothing: longer than the outbox's
    longest wait between retries (15 s), so a backlog goes out before newer events."""
    refused: int = 0
    _quiet_until: float = 0.0
    _nc: NatsClient | None = None
    _ready: bool = False
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def _connect(self) -> Any:
        if self._nc is None or self._nc.is_closed:
            self._nc = await connect_nats(
                self.url,
                self.options,
                "semspec-worker",
                first_connect_s=self.attempt_s,
                reconnect_wait_s=0.5,
            )
            self._ready = False
        js = self._nc.jetstream(timeout=2)
        if not self._ready:
            await ensure_streams(js, self.risk, update=False, replicas=self.replicas)
            self._ready = True
        return js

    def build(
        self, build: Callable[[], MonitorEvent | UserSignal], what: str
    ) -> MonitorEvent | UserSignal | None:
        """Build (and so validate) an event or signal; None when it was refused.

        ``what`` names it in the log when ``build`` raises ``ValidationError``.
        """
        try:
            return build()
        except ValidationError as exc:
            self.refused += 1
            log.error(
                "event refused: invalid payload",
                refused=what,
                error=validation_summary(exc),
                refused_total=self.refused,
            )
            return None

    async def deliver(self, message: MonitorEvent | UserSignal) -> None:
        """Publish a built event or signal under its id; ``ServiceError`` when not acknowledged."""
        if isinstance(message, UserSignal):
            subject, msg_id = signal_intake_subject(message.level), message.signal_id
        else:
            subject, msg_id = monitor_subject(message.kind), message.event_id
        await self.publish(subject, message.to_json(), msg_id)

    async def publish(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish with dedupe id in one bounded attempt; ``ServiceError`` when not acknowledged."""
        try:
            async with asyncio.timeout(self.attempt_s):
                async with self._lock:
                    js = await self._connect()
                await js.publish(subject, payload, headers={"Nats-Msg-Id": msg_id}, timeout=2)
        except Exception as exc:  # any transport failure: the caller decides to retry or drop
            # The client keeps reconnecting by itself; the next attempt finds it back or not.
            self._fell_silent()
            raise ServiceError(
                f"{subject} not acknowledged ({type(exc).__name__})",
                service="NATS",
                address=self.url,
            ) from exc

    async def publish_now(self, events: list[MonitorEvent]) -> int:
        """Publish ``events`` in order at once, stopping at the first NATS does not acknowledge
        within ``now_s``; how many it stored. Never raises: the caller's outbox sends the rest."""
        if time.monotonic() < self._quiet_until:
            return 0
        if self._nc is not None and not self._nc.is_connected:
            self._fell_silent()  # reconnecting: an outage the outboxes will wait out
            return 0
        sent = 0
        try:
            async with asyncio.timeout(self.now_s):
                for event in events:
                    await self.publish(monitor_subject(event.kind), event.to_json(), event.event_id)
                    sent += 1
        except (ServiceError, TimeoutError):
            self._fell_silent()
            log.info("events left to the outbox", sent=sent, left=len(events) - sent)
        return sent

    def _fell_silent(self) -> None:
        self._quiet_until = time.monotonic() + self.quiet_s

    async def _reset(self) -> None:
        nc, self._nc = self._nc, None
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()

    async def close(self) -> None:
        """Flush and close the connection."""
        if self._nc is not None and not self._nc.is_closed:
            try:
                await self._nc.drain()
            except Exception:
                await self._reset()
        self._nc = None
