"""The risk monitor processor: durable consumer → rules → KV state → signals → ack.

Order of the steps for each batch, and why a crash anywhere loses nothing and repeats nothing:

1. Bad events (undecodable, invalid, over-large, or naming more files than a task may touch)
   go to the dead-letter stream with the reason, then are acked (never retried, never blocking).
2. Rules run in memory over the batch, in stream order (``rules.apply_event``).
3. Every changed task state is written, then the files of the index whose holders changed
   (one key per file), each with a revision check. A state holds the ids of the events it has
   seen and an *outbox* of the signals those events produced. Crash before this: nothing was
   stored, the events come back and are evaluated again to the same result. Crash between a
   state and the index: the next start rebuilds the index from the states.
4. The outbox is published with ``Nats-Msg-Id`` = signal id, pause/halt/flag go to the workflow,
   and the states are written again with an empty outbox. Crash before the empty outbox is
   stored: the next start flushes every outbox it finds; JetStream drops a re-published id
   (within ``signal_dedupe_window_s``) and the workflow drops a repeated ``signal_id``.
5. The events are acked. Crash before: they come back, are recognised as seen, change nothing.

Any number of monitors may run on one stack; one of them is active (ADR 0005). It holds a lease
(``lease``), renewed in the background, and checks it before each commit step (state, index,
publish, ack): without a valid lease it hands the batch back un-acked and steps down. The others
stand by, trying to take the lease, and watch the consumer (``watchdog``): when events wait
with nothing acknowledged for ``risk.leader.stall_s`` under one holder, a standby takes the
lease from it. The one that takes it runs the start-up recovery first (outboxes, file index), so
it continues exactly where the previous one stopped. A stalled monitor that writes after its
lease ran out loses the revision race, reloads and steps down.

A batch that fails is retried one event at a time, so one poison event cannot hold the others
back; an event that fails on its ``risk.max_deliver``-th delivery goes to the dead letters with
the error and the monitor moves on. Between batches, tasks whose workflow has closed (asked
through ``WorkflowLiveness``) or that sent nothing for ``risk.idle_task_s`` leave the active
set and the file index (``reconcile``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from pydantic import ValidationError

from semspec.core.config.models import RiskConfig
from semspec.core.logging import logger_for
from semspec.core.telemetry.types import MonitorMetrics
from semspec.processors.risk_monitor.deadletter import dead_letter, parse_event
from semspec.processors.risk_monitor.lease import Lease, new_holder
from semspec.processors.risk_monitor.metrics import MonitorMeter
from semspec.processors.risk_monitor.puller import PullFeed
from semspec.processors.risk_monitor.rules import (
    MAX_FILE_HOLDERS,
    Emission,
    apply_event,
    index_keys,
    related_tasks,
)
from semspec.processors.risk_monitor.state import FileIndex, PendingSignal, TaskState
from semspec.processors.risk_monitor.store import StateStore
from semspec.processors.risk_monitor.watchdog import StandbyWatch
from semspec.vocabulary.events import MonitorEvent, UserSignal, validation_summary
from semspec.vocabulary.streams import (
    CONSUMER,
    STATE_BUCKET,
    ensure_bucket,
    ensure_consumer,
    ensure_lease_bucket,
    ensure_streams,
)
from semspec.vocabulary.subjects import MONITOR_STREAM, signal_intake_subject

log = logger_for("risk-monitor")


MAX_TASK_ID_CHARS = 256
"""Longer task ids are refused: ids are stored in every file the task touched."""
_PARALLEL_QUESTIONS = 32
_LIVENESS_TIMEOUT_S = 5.0
_ORPHAN_SLACK_S = 0.5
"""Time the server may take past ``ack_wait`` to put an unacknowledged event up again."""


class LeaseLost(Exception):
    """This monitor is no longer the active one: its batch goes back un-acked."""


class WorkflowLiveness(Protocol):
    """Whether a task's workflow is still open (the runner hands in one that asks Temporal)."""

    async def is_open(self, task_id: str) -> bool | None:
        """True while the workflow runs, False once closed or unknown, None if no answer."""
        ...


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
    retired: int = 0
    """Tasks taken out of the active set because their workflow closed or they went idle."""
    takeovers: int = 0
    """Times this monitor took the lease and became the active one."""
    step_downs: int = 0
    """Times it lost the lease while running and went back to standing by."""


class RiskMonitor:
    """Consumes loop events and emits graduated user signals; state lives in JetStream KV."""

    def __init__(
        self,
        nc: NATS,
        risk: RiskConfig,
        sink: SignalSink | None = None,
        *,
        liveness: WorkflowLiveness | None = None,
        consumer: str = CONSUMER,
        bucket: str = STATE_BUCKET,
        identity: str = "",
        replicas: int = 1,
        meter: MonitorMeter | None = None,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._risk = risk
        self._sink = sink
        self._consumer = consumer
        self._bucket = bucket
        self._replicas = replicas  # of every stream, bucket and consumer it creates
        self._holder = new_holder(identity)
        self._feed: PullFeed | None = None
        self._lease: Lease | None = None
        self._watch: StandbyWatch | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._store: StateStore | None = None
        self._cache: dict[str, TaskState] = {}
        self._index = FileIndex()
        self._liveness = liveness
        self._next_reconcile = 0.0
        self.stats = MonitorStats()
        self._meter = meter or MonitorMeter(MonitorMetrics())
        """The metrics (docs/telemetry.md); they count nothing unless telemetry is on."""

    async def start(self) -> None:
        """Create what is missing; take the lease if it is free, then finish what a crashed run
        left half done and start pulling (else stand by: ``run`` keeps trying)."""
        await ensure_streams(self._js, self._risk, replicas=self._replicas)
        kv = await ensure_bucket(self._js, self._bucket, self._risk, self._replicas)
        self._store = StateStore(kv)
        await ensure_consumer(self._js, self._risk, self._consumer)
        leases = await ensure_lease_bucket(self._js, self._risk.leader.lease_ttl_s, self._replicas)
        self._lease = Lease(leases, self._holder, self._risk.leader.lease_ttl_s)
        stall_s = self._risk.leader.stall_s
        self._watch = StandbyWatch(self._lease, self._js, stall_s, self._consumer)
        if not await self._take_over():
            log().info("standing by", identity=self._holder.identity)

    @property
    def active(self) -> bool:
        """True while this monitor holds the lease and consumes."""
        return self._feed is not None

    async def run(self, stop: asyncio.Event, idle_wait: float = 0.5) -> None:
        """Process batches while active, else try to take over, until ``stop`` is set; the
        batch in hand is always finished, and the lease is given up on the way out."""
        self._next_reconcile = time.monotonic() + self._risk.reconcile_interval_s
        try:
            while not stop.is_set():
                if self._feed is None:
                    if not await self._take_over():
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(stop.wait(), self._risk.leader.poll_s)
                    continue
                try:
                    await self._serve(self._feed, idle_wait)
                except LeaseLost:
                    await self._step_down()
                    # One poll before trying again: a standby that did not stall gets it first.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), self._risk.leader.poll_s)
        finally:
            if self._renewer is not None:
                self._renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._renewer
                self._renewer = None
            await self._step_down(stopping=True)

    async def _serve(self, feed: PullFeed, idle_wait: float) -> None:
        """One round of the active monitor: a batch (if any), then reconcile when due."""
        self._fence()  # a lost lease stops the pulling too, not only the writes
        msgs = await feed.next_batch(idle_wait)
        try:
            if msgs:
                await self.process(msgs)
        except LeaseLost:
            await _hand_back(m for m in msgs if not m.is_acked)
            raise
        if time.monotonic() >= self._next_reconcile:
            await self._guarded(self.reconcile)
            self._next_reconcile = time.monotonic() + self._risk.reconcile_interval_s

    async def _take_over(self) -> bool:
        """Take the lease if it is free, or from a holder under which events are not being
        consumed; then recover as at start and start pulling."""
        if not await self.lease.acquire() and not await self._take_from_stalled():
            return False
        if self._renewer is None:
            self._renewer = asyncio.create_task(self._renew())
        quiet = self.lease.quiet_until - time.monotonic()
        if quiet > 0:  # the stalled holder may still trust its lease until then
            await asyncio.sleep(quiet)
        self._cache.clear()
        self.store.forget()
        try:
            await self._recover()
            if not self.lease.given_up:
                await self._await_orphans()
            feed = PullFeed(self._nc, MONITOR_STREAM, self._consumer, self._risk.batch_size)
            await feed.start()
        except Exception as exc:  # e.g. NATS is away: stand by and try again
            log().warning("taking over failed; standing by", error=str(exc))
            await self.lease.release()
            return False
        self._feed = feed
        self.stats.takeovers += 1
        log().info("active: consuming loop events", identity=self._holder.identity)
        return True

    async def _take_from_stalled(self) -> bool:
        """The standby's watchdog: take the lease from its holder if events have waited for
        ``risk.leader.stall_s`` with nothing acknowledged under it."""
        if self._watch is None:
            return False
        stall = await self._watch.stalled()
        if stall is None:
            return False
        log().warning(
            "events are not being consumed: taking the lease",
            holder=stall.holder.identity,
            progress=stall.progress.describe(),
        )
        return await self.lease.take_from_stalled(stall.holder)

    async def _await_orphans(self) -> None:
        """Wait until the events a monitor that died holding the lease had pulled are due
        again (``ack_wait_s`` after it pulled them): the consumer hands those out before newer
        ones, so the events are evaluated in stream order, as one monitor would have."""
        delay = self._risk.ack_wait_s - self.lease.since_last_pull_s + _ORPHAN_SLACK_S
        if delay <= 0:
            return
        info = await self._js.consumer_info(MONITOR_STREAM, self._consumer)
        if info.num_ack_pending:
            log().info("waiting for the events the previous monitor held", seconds=delay)
            await asyncio.sleep(delay)

    async def _step_down(self, *, stopping: bool = False) -> None:
        """Stop pulling, hand back what was pulled but not handled, give up the lease."""
        feed, self._feed = self._feed, None
        if feed is not None:
            await _hand_back(await feed.stop())
            if not stopping:
                self.stats.step_downs += 1
                log().warning("lease lost: standing by", identity=self._holder.identity)
        self._cache.clear()
        self._index = FileIndex()
        if self._store is not None:
            self.store.forget()
        if self._lease is not None:
            await self.lease.release()

    async def _renew(self) -> None:
        """Keep the lease while held (every third of its TTL), in the background from the first
        takeover until ``run`` ends; also while a takeover recovers, which may take longer."""
        while True:
            await asyncio.sleep(self.lease.renew_every_s)
            if self.lease.held:
                await self.lease.renew()

    def _fence(self) -> None:
        """Raise ``LeaseLost`` unless this monitor may still write (checked before each step)."""
        if not self.lease.valid():
            raise LeaseLost(self._holder.identity)

    async def process(self, msgs: list[Msg]) -> None:
        """Handle one batch; on a failure reload state and retry its events one at a time.

        An event that fails alone is handed back for redelivery, or dead-lettered on its last
        allowed delivery (``risk.max_deliver``), so a poison event never blocks the stream.
        """
        self.stats.batches += 1
        try:
            await self._process(msgs)
            return
        except LeaseLost:
            raise
        except Exception as exc:
            self.stats.failed_batches += 1
            log().warning("batch failed; retrying its events one by one", size=len(msgs))
            await self._reload()
            if len(msgs) == 1:
                await self._failed(msgs[0], exc)
                return
        for msg in msgs:
            if msg.is_acked:
                continue
            try:
                await self._process([msg])
            except LeaseLost:
                raise
            except Exception as exc:
                await self._reload()
                await self._failed(msg, exc)

    async def reconcile(self, now: float | None = None) -> list[str]:
        """Retire active tasks whose workflow closed or that were idle for ``risk.idle_task_s``.

        A retired task is stored inactive and leaves the file index, as after ``finished``;
        its next event (if one ever comes) makes it active again. Returns the retired ids.
        """
        now = time.time() if now is None else now
        active = sorted(t for t, s in self._cache.items() if s.active)
        idle_after = self._risk.idle_task_s
        retired = [t for t in active if 0 < self._cache[t].received_at < now - idle_after]
        if self._liveness is not None:
            asked = [t for t in active if t not in retired]
            for start in range(0, len(asked), _PARALLEL_QUESTIONS):
                chunk = asked[start : start + _PARALLEL_QUESTIONS]
                answers = await asyncio.gather(*(self._is_open(t) for t in chunk))
                if all(answer is None for answer in answers):
                    break  # Temporal gives no answers now: keep the rest for the next round
                retired += [
                    t for t, is_open in zip(chunk, answers, strict=True) if is_open is False
                ]
        if not retired:
            return []
        index = self._index.remove(*retired)
        states = [replace(self._cache[t], active=False) for t in retired]
        self._fence()
        await asyncio.gather(*(self.store.save_task(s) for s in states))
        await self.store.save_index(self._index, index)
        self._index = index
        for task_id in retired:
            self._cache.pop(task_id, None)
        self.stats.retired += len(retired)
        log().info("tasks left the active set", tasks=len(retired), first=retired[:5])
        return sorted(retired)

    async def _is_open(self, task_id: str) -> bool | None:
        """The liveness answer, or None after ``_LIVENESS_TIMEOUT_S`` (events wait meanwhile)."""
        assert self._liveness is not None
        try:
            return await asyncio.wait_for(self._liveness.is_open(task_id), _LIVENESS_TIMEOUT_S)
        except TimeoutError:
            return None

    async def _guarded(self, step: Any) -> None:
        """Run ``step`` (no arguments); a failure reloads state instead of stopping the loop."""
        try:
            await step()
        except Exception as exc:
            log().warning("reconcile failed; reloading state", error=str(exc))
            await self._reload()

    async def _reload(self) -> None:
        """Forget cached state and read it again from KV (after a failed batch)."""
        self._cache.clear()
        self.store.forget()
        while True:  # e.g. NATS is reconnecting: keep trying while the lease lasts
            self._fence()
            try:
                await self._recover()
                return
            except LeaseLost:
                raise
            except Exception as exc:
                log().warning("recovery failed; retrying", error=str(exc))
                await asyncio.sleep(1.0)

    async def _failed(self, msg: Msg, exc: Exception) -> None:
        """Hand a failed event back, or dead-letter it on its last allowed delivery."""
        try:
            delivered = msg.metadata.num_delivered
        except Exception:  # no JetStream metadata: nothing will redeliver it anyway
            delivered = self._risk.max_deliver
        error = f"{type(exc).__name__}: {exc}"
        if delivered < self._risk.max_deliver:
            log().warning("event failed; handed back", subject=msg.subject, error=error)
            # Best effort: without the nak the event still returns after ack_wait.
            with contextlib.suppress(Exception):
                await msg.nak(delay=1.0)
            return
        await self._dead_letter(msg, f"failed {delivered} deliveries: {error}")

    @property
    def store(self) -> StateStore:
        """The KV state store (available once ``start`` has run)."""
        if self._store is None:
            raise RuntimeError("RiskMonitor.start() was not awaited")
        return self._store

    @property
    def lease(self) -> Lease:
        """The lease this monitor holds or waits for (available once ``start`` has run)."""
        if self._lease is None:
            raise RuntimeError("RiskMonitor.start() was not awaited")
        return self._lease

    async def _dead_letter(self, msg: Msg, error: str) -> None:
        log().warning("event to dead letters", subject=msg.subject, error=error)
        await dead_letter(self._js, msg, error, self._risk.limits.dead_letters.max_msg_size)
        await msg.ack()
        self.stats.dead_letters += 1

    async def _process(self, msgs: list[Msg]) -> None:
        events: list[tuple[Msg, MonitorEvent]] = []
        limit = self._risk.limits.events.max_msg_size
        for msg in msgs:
            try:
                if len(msg.data) > limit:
                    raise ValueError(f"event of {len(msg.data)} bytes, over the {limit} limit")
                event = parse_event(msg.subject, msg.data)
                if len(event.task_id) > MAX_TASK_ID_CHARS:
                    raise ValueError(f"task id longer than {MAX_TASK_ID_CHARS} characters")
                events.append((msg, event))
            except ValueError as exc:
                await self._dead_letter(msg, str(exc))

        index = self._index
        changed: dict[str, TaskState] = {}
        used: list[Msg] = []
        for msg, event in events:
            states = {}
            for task_id in related_tasks(event, index):
                state = await self._state(task_id)
                if state is not None:
                    states[task_id] = state
            if (
                refusal := self._too_many_files(event, states.get(event.task_id), index)
            ) is not None:
                await self._dead_letter(msg, refusal)
                continue
            used.append(msg)
            step = apply_event(event, states, index, self._risk)
            if step.duplicate:
                self.stats.duplicates += 1
                continue
            self.stats.events += 1
            self._meter.event(event)
            step.states[event.task_id].received_at = _stored_at(msg)
            index = step.index
            self._cache.update(step.states)
            changed.update(step.states)
            self._log(event, step.emissions)

        # States first: a state that cannot be stored fails the batch before the index moves.
        self._fence()
        await asyncio.gather(*(self.store.save_task(s) for s in changed.values()))
        self._fence()
        await self.store.save_index(self._index, index)
        self._index = index
        await self._flush(s for s in changed.values() if s.outbox)
        for state in changed.values():
            if not state.active:
                self._cache.pop(state.task_id, None)  # finished: read from KV if it ever returns
        self._fence()
        for msg in used:
            await msg.ack()
        self.stats.acked += len(used)

    def _too_many_files(
        self, event: MonitorEvent, state: TaskState | None, index: FileIndex
    ) -> str | None:
        """Why a ``files`` event is refused (too many files for one task, or for one file's
        holders), or None; these bounds keep every stored value under the size limit."""
        if event.kind != "files":
            return None
        cap = self._risk.max_task_files
        touched = set(event.data.files) | set(state.touched if state else [])
        if len(touched) > cap:
            return f"the task would touch {len(touched)} files, more than risk.max_task_files"
        for key in index_keys(event.data.repo, event.data.files):
            holders = index.holders(key)
            if len(holders) >= MAX_FILE_HOLDERS and event.task_id not in holders:
                return f"a file is already held by {len(holders)} active tasks"
        return None

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
        if pending:
            self._fence()
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
            signal_intake_subject(signal.level),
            signal.to_json(),
            headers={"Nats-Msg-Id": signal_id},
        )
        if ack.duplicate:
            self.stats.signals_deduped += 1
            log().info("signal already published", signal_id=signal_id)
        else:
            self.stats.signals += 1
            self._meter.signal(signal)
        if pending.action and self._sink is not None:
            await self._sink.deliver(signal.task_id, pending.action, signal)

    async def _recover(self) -> None:
        """Flush outboxes a crashed run left behind, warm the cache and repair the file index."""
        snapshot = await self.store.scan()
        states, stored = snapshot.states, snapshot.index
        flushed = {s.task_id: s for s in await self._flush(s for s in states if s.outbox)}
        states = [flushed.get(s.task_id, s) for s in states]
        index = FileIndex()
        for state in states:
            if state.active:
                self._cache[state.task_id] = state
                index = index.add(state.task_id, index_keys(state.repo, state.touched))
        # Every active task's touched files, from the states (the source of truth).
        self._fence()
        await self.store.save_index(stored, index)
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


def _stored_at(msg: Msg) -> float:
    """When JetStream stored ``msg`` (epoch seconds), or now for a message without metadata."""
    try:
        return msg.metadata.timestamp.timestamp()
    except Exception:
        return time.time()


async def _hand_back(msgs: Iterable[Msg]) -> None:
    """Nak ``msgs`` so they are delivered again at once rather than after ``ack_wait``."""
    for msg in msgs:
        with contextlib.suppress(Exception):  # else it returns after ack_wait anyway
            await msg.nak()
