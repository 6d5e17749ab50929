"""Analytics off the hot path: a bounded queue (drop newest) drained by a batch writer."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

MAX_QUEUE = 2_000


class AnalyticsSink(Protocol):
    """Where batches of analytics events end up."""

    async def write(self, batch: Sequence[dict[str, Any]]) -> None: ...


class AnalyticsQueue:
    """A bounded queue of events; enqueue never blocks and drops the newest event when full."""

    def __init__(self, maxsize: int = MAX_QUEUE) -> None:
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=maxsize)
        self.drop_count_by_type: Counter[str] = Counter()
        self.drop_count_by_reason: Counter[str] = Counter()

    def enqueue(self, event: dict[str, Any]) -> bool:
        """Queue ``event`` if there is room; otherwise count the drop by type and reason."""
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.drop_count_by_type[str(event.get("type", "unknown"))] += 1
            for reason in event.get("reason_codes", ()):
                self.drop_count_by_reason[str(reason)] += 1
            return False
        return True

    def qsize(self) -> int:
        """Events waiting to be written."""
        return self._queue.qsize()

    def take_batch(self, max_items: int) -> list[dict[str, Any]]:
        """Up to ``max_items`` queued events, without waiting."""
        batch: list[dict[str, Any]] = []
        while len(batch) < max_items:
            try:
                batch.append(self._queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return batch

    async def wait_batch(self, max_items: int, timeout: float) -> list[dict[str, Any]]:
        """Wait up to ``timeout`` seconds for the first event, then take a batch."""
        try:
            first = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return []
        return [first, *self.take_batch(max_items - 1)]


class BatchWriter:
    """A background task that drains the queue into a sink in batches."""

    def __init__(
        self,
        queue: AnalyticsQueue,
        sink: AnalyticsSink,
        *,
        batch_size: int = 200,
        interval_s: float = 0.5,
    ) -> None:
        self.queue = queue
        self.sink = sink
        self.batch_size = batch_size
        self.interval_s = interval_s
        self.written = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start draining in the running event loop."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the task and flush what is still queued."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        while batch := self.queue.take_batch(self.batch_size):
            await self._write(batch)

    async def _run(self) -> None:
        while True:
            batch = await self.queue.wait_batch(self.batch_size, self.interval_s)
            if batch:
                await self._write(batch)

    async def _write(self, batch: list[dict[str, Any]]) -> None:
        await self.sink.write(batch)
        self.written += len(batch)


class JsonlSink:
    """Appends events as JSON lines to a file, in a thread so the loop never blocks on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def write(self, batch: Sequence[dict[str, Any]]) -> None:
        """Append ``batch`` to the file."""
        lines = "".join(json.dumps(e, sort_keys=True, default=str) + "\n" for e in batch)
        await asyncio.to_thread(self._append, lines)

    def _append(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text)
