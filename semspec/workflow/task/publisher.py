"""Publish loop events to JetStream without ever stalling the loop.

Each event carries a ``Nats-Msg-Id`` derived from the workflow run, iteration and kind, so an
activity retry publishes the same id and JetStream drops the duplicate. When NATS is down the
publisher retries for a bounded time, then drops the event and counts it (``dropped``).

Events and signals are validated against their models before they are sent (``send``). One
that fails is a bug in the code that built it: it is refused, logged at error level with the
fields at fault and counted (``refused``), and the loop goes on without it, as it does when
NATS is down. Failing the activity instead would make Temporal retry the same bad payload and
then escalate the task over an event nobody needs to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from pydantic import ValidationError

from semspec.core.config.models import RiskConfig
from semspec.core.logging import get_logger
from semspec.processors.risk_monitor.streams import ensure_streams
from semspec.vocabulary.events import MonitorEvent, UserSignal, validation_summary
from semspec.vocabulary.subjects import monitor_subject, signal_subject

log = get_logger("publisher")


@dataclass
class EventPublisher:
    """A lazily connected JetStream publisher with a bounded retry window."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)
    retry_window_s: float = 5.0
    risk: RiskConfig = field(default_factory=RiskConfig)
    """Limits of the streams it creates when missing (the monitor updates existing ones)."""
    dropped: int = 0
    refused: int = 0
    _nc: NatsClient | None = None
    _ready: bool = False
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def _connect(self) -> Any:
        if self._nc is None or self._nc.is_closed:
            self._nc = await nats.connect(
                self.url,
                connect_timeout=1,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                allow_reconnect=True,
                **self.options,
            )
            self._ready = False
        js = self._nc.jetstream(timeout=2)
        if not self._ready:
            await ensure_streams(js, self.risk, update=False)
            self._ready = True
        return js

    async def send(self, build: Callable[[], MonitorEvent | UserSignal], what: str) -> bool:
        """Build (and so validate) an event or signal, then publish it; False if not sent.

        ``what`` names it in the log when ``build`` raises ``ValidationError``.
        """
        try:
            message = build()
        except ValidationError as exc:
            self.refused += 1
            log.error(
                "event refused: invalid payload",
                refused=what,
                error=validation_summary(exc),
                refused_total=self.refused,
            )
            return False
        if isinstance(message, UserSignal):
            subject, msg_id = signal_subject(message.level), message.signal_id
        else:
            subject, msg_id = monitor_subject(message.kind), message.event_id
        return await self.publish(subject, message.to_json(), msg_id)

    async def publish(self, subject: str, payload: bytes, msg_id: str) -> bool:
        """Publish with dedupe id; True when JetStream acknowledged, False when dropped."""
        deadline = time.monotonic() + self.retry_window_s
        delay = 0.1
        while True:
            try:
                async with self._lock:
                    # Bounded: a reconnecting client would otherwise wait for NATS forever.
                    js = await asyncio.wait_for(
                        self._connect(), max(0.1, deadline - time.monotonic())
                    )
                await js.publish(subject, payload, headers={"Nats-Msg-Id": msg_id}, timeout=2)
                return True
            except Exception as exc:  # any transport failure: retry, then drop
                if time.monotonic() + delay > deadline:
                    self.dropped += 1
                    log.warning(
                        "event dropped: NATS unavailable",
                        subject=subject,
                        msg_id=msg_id,
                        error=type(exc).__name__,
                        dropped_total=self.dropped,
                    )
                    await self._reset()
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

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
