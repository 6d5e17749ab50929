"""A streaming pull on the durable consumer: one pull request kept open, micro-batches out.

nats-py's ``fetch`` waits for a whole batch or its timeout once the stream is idle, which adds
that timeout to the latency of every lone event; here the first message ends the wait and
whatever else has already arrived joins it.
"""

from __future__ import annotations

import asyncio
import json
import time

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

_HEARTBEAT = "100"


class PullFeed:
    """Delivers messages of ``consumer`` on ``stream`` in batches of at most ``batch``."""

    def __init__(
        self, nc: NATS, stream: str, consumer: str, batch: int, expires_s: float = 5.0
    ) -> None:
        self._nc = nc
        self._next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self._batch = batch
        self._expires_s = expires_s
        self._queue: asyncio.Queue[Msg] = asyncio.Queue()
        self._inbox = ""
        self._sub: Subscription | None = None
        self._outstanding = 0
        self._deadline = 0.0
        self._closed = False

    async def start(self) -> None:
        """Subscribe to a private inbox and ask for the first batch."""
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_msg)
        await self._request()

    async def next_batch(self, wait: float) -> list[Msg]:
        """The messages that have arrived, waiting up to ``wait`` seconds for the first one."""
        if self._outstanding <= 0 or time.monotonic() > self._deadline:
            # The request ran out or was lost (e.g. across a reconnect): ask again.
            await self._request()
        try:
            first = await asyncio.wait_for(self._queue.get(), wait)
        except TimeoutError:
            return []
        msgs = [first]
        while len(msgs) < self._batch and not self._queue.empty():
            msgs.append(self._queue.get_nowait())
        return msgs

    async def stop(self) -> list[Msg]:
        """Stop pulling; returns messages received but not handed out (the caller naks them)."""
        self._closed = True
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
        left = []
        while not self._queue.empty():
            left.append(self._queue.get_nowait())
        return left

    async def _request(self) -> None:
        if self._closed:
            return
        self._outstanding = self._batch
        self._deadline = time.monotonic() + self._expires_s + 1.0
        body = {"batch": self._batch, "expires": int(self._expires_s * 1_000_000_000)}
        await self._nc.publish(self._next_subject, json.dumps(body).encode(), reply=self._inbox)

    async def _on_msg(self, msg: Msg) -> None:
        status = msg.headers.get("Status") if msg.headers else None
        if status == _HEARTBEAT:
            return
        if status:
            self._outstanding = 0  # 404/408/409: this pull request is over
        else:
            self._queue.put_nowait(msg)
            self._outstanding -= 1
        # Keep one request open, but stop pulling while the processor is a batch behind.
        if self._outstanding <= 0 and self._queue.qsize() < self._batch:
            await self._request()
