"""The risk monitor processor: durable consumer → rules → KV state → signals → ack.

Order of the steps for each batch, and why a crash anywhere loses nothing and repeats nothing:

1. Bad events go to the dead-letter stream, then are acked (never retried, never blocking).
2. Rules run in memory over the batch, in stream order (``rules.apply_event``).
3. The file index is written, then every changed task state, each with a revision check. A
   state holds the ids of the events it has seen and an *outbox* of the signals those events
   produced. Crash before this: nothing was stored, the events come back and are evaluated
   again to the same result. Crash between the index and a state: adding a task to a file twice
   changes nothing, so re-evaluation again gives the same result.
4. The outbox is published with ``Nats-Msg-Id`` = signal id, pause/halt/flag go to the workflow,
   and the states are written again with an empty outbox. Crash before the empty outbox is
   stored: the next start flushes every outbox it finds; JetStream drops a re-published id
   (within ``signal_dedupe_window_s``) and the workflow drops a repeated ``signal_id``.
5. The events are acked. Crash before: they come back, are recognised as seen, change nothing.

One monitor consumes the stream at a time; a second one loses the revision race, reloads and
lets its batch be redelivered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from pydantic import ValidationError

from semspec.core.config.models import RiskConfig
from semspec.core.logging import get_logger
from semspec.processors.risk_monitor.deadletter import dead_letter, parse_event
from semspec.processors.risk_monitor.puller import PullFeed
from semspec.processors.risk_monitor.rules import Emission, apply_event, related_tasks
from semspec.processors.risk_monitor.state import FileIndex, PendingSignal, TaskState
from semspec.processors.risk_monitor.store import StateStore
from semspec.processors.risk_monitor.streams import (
    CONSUMER,
    STATE_BUCKET,
    ensure_bucket,
    ensure_consumer,
    ensure_streams,
)
from semspec.vocabulary.events import MonitorEvent, UserSignal, validation_summary
from semspec.vocabulary.subjects import MONITOR_STREAM, signal_subject


def log() -> Any:
    """The logger, bound when used: a module-level one would keep the import-time setup."""
    return get_logger("risk-monitor")


class SignalSink(Protocol):
    """Where pause/halt/flag go after a signal is published (the Temporal signal bridge)."""

    async def deliver(self, task_id: str, action: str, signal: UserSignal) -> bool:
        """Send ``action`` to the task's workflow; false if it could not be delivered."""
        ...


@dataclass
class MonitorStats:
    """Counters for logs, tests and the benchmark."""

    events: int = 0
    acked: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    signals: int = 0
    signals_deduped: int = 0
    signals_invalid: int = 0
    batches: int = 0
    failed_batches: int = 0


class RiskMonitor:
    """Consumes loop events and emits graduated user signals; state lives in JetStream KV."""

    def __init__(
        self,
        nc: NATS,
        risk: RiskConfig,
        sink: SignalSink | None = None,
        *,
        consumer: str = CONSUMER,
        bucket: str = STATE_BUCKET,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._risk = risk
        self._sink = sink
        self._consumer = consumer
        self._bucket = bucket
        self._feed = PullFeed(nc, MONITOR_STREAM, consumer, risk.batch_size)
        self._store: StateStore | None = None
        self._cache: dict[str, TaskState] = {}
        self._index = FileIndex()
        self.stats = MonitorStats()

    async def start(self) -> None:
        """Create what is missing, finish what a crashed run left half done, start pulling."""
        await ensure_streams(self._js, self._risk)
        kv = await ensure_bucket(self._js, self._bucket)
        self._store = StateStore(kv)
        await ensure_consumer(self._js, self._risk, self._consumer)
        await self._recover()
        await self._feed.start()

    async def run(self, stop: asyncio.Event, idle_wait: float = 0.5) -> None:
        """Process batches until ``stop`` is set; the batch in hand is always finished."""
        while not stop.is_set():
            msgs = await self._feed.next_batch(idle_wait)
            if msgs:
                await self.process(msgs)
        for msg in await self._feed.stop():
            with contextlib.suppress(Exception):  # else it returns after ack_wait anyway
                await msg.nak()  # handed back at once rather than after ack_wait

    async def process(self, msgs: list[Msg]) -> None:
        """Handle one batch; on a failure reload state and let the batch be redelivered."""
        self.stats.batches += 1
        try:
            await self._process(msgs)
        except Exception:
            self.stats.failed_batches += 1
            log().exception("batch failed; reloading state", size=len(msgs))
            self._cache.clear()
            self.store.forget()
            while True:  # e.g. NATS is reconnecting: keep trying rather than crash
                try:
                    await self._recover()
                    break
                except Exception as exc:
                    log().warning("recovery failed; retrying", error=str(exc))
                    await asyncio.sleep(1.0)
            for msg in msgs:
                if not msg.is_acked:
                    # Best effort: without the nak the event still returns after ack_wait.
                    with contextlib.suppress(Exception):
                        await msg.nak(delay=1.0)

    @property
    def store(self) -> StateStore:
        """The KV state store (available once ``start`` has run)."""
        if self._store is None:
            raise RuntimeError("RiskMonitor.start() was not awaited")
        return self._store

    async def _process(self, msgs: list[Msg]) -> None:
        events: list[tuple[Msg, MonitorEvent]] = []
        for msg in msgs:
            try:
                events.append((msg, parse_event(msg.subject, msg.data)))
            except ValueError as exc:
                log().warning("bad event to dead letters", subject=msg.subject, error=str(exc))
                await dead_letter(self._js, msg, str(exc))
                await msg.ack()
                self.stats.dead_letters += 1

        index = self._index
        changed: dict[str, TaskState] = {}
        for _, event in events:
            states = {}
            for task_id in related_tasks(event, index):
                state = await self._state(task_id)
                if state is not None:
                    states[task_id] = state
            step = apply_event(event, states, index, self._risk)
            if step.duplicate:
                self.stats.duplicates += 1
                continue
            self.stats.events += 1
            index = step.index
            self._cache.update(step.states)
            changed.update(step.states)
            self._log(event, step.emissions)

        if index.files != self._index.files:
            await self.store.save_index(index)
        self._index = index
        await asyncio.gather(*(self.store.save_task(s) for s in changed.values()))
        await self._flush(s for s in changed.values() if s.outbox)
        for state in changed.values():
            if not state.active:
                self._cache.pop(state.task_id, None)  # finished: read from KV if it ever returns
        for msg, _ in events:
            await msg.ack()
        self.stats.acked += len(events)

    async def _state(self, task_id: str) -> TaskState | None:
        state = self._cache.get(task_id)
        if state is None:
            state = await self.store.load_task(task_id)
            if state is not None:
                self._cache[task_id] = state
        return state

    async def _flush(self, states: Iterable[TaskState]) -> list[TaskState]:
        """Publish each outbox, hand actions to the bridge, then store the emptied outbox."""
        pending = list(states)
        # Tasks in parallel; within a task in order, so its levels reach the stream in order.
        await asyncio.gather(*(self._publish_outbox(s) for s in pending))
        emptied = [replace(s, outbox=[]) for s in pending]
        await asyncio.gather(*(self.store.save_task(s) for s in emptied))
        self._cache.update({s.task_id: s for s in emptied if s.active})
        return emptied

    async def _publish_outbox(self, state: TaskState) -> None:
        for pending in state.outbox:
            await self._publish(pending)

    async def _publish(self, pending: PendingSignal) -> None:
        try:
            signal = UserSignal.model_validate(pending.signal)
        except ValidationError as exc:
            # Only an outbox stored by an older monitor can get here; it is dropped, not retried.
            self.stats.signals_invalid += 1
            log().error("stored signal is invalid; dropped", error=validation_summary(exc))
            return
        signal_id = signal.signal_id
        ack = await self._js.publish(
            signal_subject(signal.level), signal.to_json(), headers={"Nats-Msg-Id": signal_id}
        )
        if ack.duplicate:
            self.stats.signals_deduped += 1
            log().info("signal already published", signal_id=signal_id)
        else:
            self.stats.signals += 1
        if pending.action and self._sink is not None:
            await self._sink.deliver(signal.task_id, pending.action, signal)

    async def _recover(self) -> None:
        """Flush outboxes a crashed run left behind, warm the cache and repair the file index."""
        states = await self.store.task_states()
        flushed = {s.task_id: s for s in await self._flush(s for s in states if s.outbox)}
        states = [flushed.get(s.task_id, s) for s in states]
        stored = await self.store.load_index()
        index = FileIndex()
        for state in states:
            if state.active:
                self._cache[state.task_id] = state
                index = index.add(state.task_id, state.touched)
        # Every active task's touched files, from the states (the source of truth).
        if index.files != stored.files:
            await self.store.save_index(index)
        self._index = index
        if states:
            log().info("state recovered", tasks=len(states), active=len(self._cache))

    def _log(self, event: MonitorEvent, emissions: list[Emission]) -> None:
        for emission in emissions:
            signal = emission.signal
            log().info(
                "risk signal" if emission.published else "risk observed",
                task_id=signal.task_id,
                level=signal.level,
                reason=signal.reason,
                signal_id=signal.signal_id,
                event_id=event.event_id,
            )
