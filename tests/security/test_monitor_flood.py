"""A forged flood of loop events against the risk monitor on a real NATS server.

Anyone who can publish on ``agent.monitor.*`` can invent tasks. The flood below once stopped the
monitor for good: the single-key file index passed the server's 1 MiB payload limit, every
batch failed on it and was redelivered without end. Now the index is one key per file, an event
that keeps failing is dead-lettered after ``risk.max_deliver`` deliveries, and a real task's
next signal still arrives.
"""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import NoKeysError
from temporalio.client import Client

from semspec.core.config.models import RiskConfig, RiskLimits, StreamLimits
from semspec.processors.risk_monitor.deadletter import ERROR_HEADER
from semspec.processors.risk_monitor.store import StateStore
from semspec.processors.risk_monitor.workflow_liveness import TemporalLiveness
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.streams import STATE_BUCKET, ensure_bucket
from semspec.vocabulary.subjects import DEAD_LETTER_STREAM, SIGNAL_STREAM, monitor_subject
from semspec.vocabulary.workflow_names import task_workflow_id
from tests.support.monitor_events import loop_event
from tests.support.polling import until
from tests.support.running_monitor import Running

MAX_DELIVER = 3
RISK = RiskConfig(ack_wait_s=2.0, max_deliver=MAX_DELIVER)
FAKE_TASKS = 300
FILES_PER_TASK = 60
POISON_HALF = 4_600


async def publish(nc: NATS, ev: MonitorEvent) -> None:
    headers = {"Nats-Msg-Id": ev.event_id}
    await nc.jetstream().publish(monitor_subject(ev.kind), ev.to_json(), headers=headers)


def fake_task_files(task: int) -> list[str]:
    """Distinct long paths per fake task: together far more than 1 MiB of index."""
    return [
        f"src/forged/task{task:04d}/module_{n:03d}_{'x' * 40}.py" for n in range(FILES_PER_TASK)
    ]


def poison_events() -> list[MonitorEvent]:
    """Two valid ``files`` events whose union makes the task's state too large to store.

    Each is under the event size limit and the file count limit; only together do they fail,
    and they fail on every delivery.
    """
    half = POISON_HALF
    long = "p" * 110
    first = [f"a/{n:05d}{long}" for n in range(half)]
    second = [f"b/{n:05d}{long}" for n in range(half)]
    return [
        loop_event("files", task="poison", event_id="poison-1", files=first),
        loop_event("files", task="poison", event_id="poison-2", files=second),
    ]


async def stored_sizes(nc: NATS) -> dict[str, int]:
    kv = await ensure_bucket(nc.jetstream())
    sizes: dict[str, int] = {}
    try:
        keys = await kv.keys()
    except NoKeysError:
        return sizes
    for key in keys:
        entry = await kv.get(key)
        sizes[key] = len(entry.value or b"")
    return sizes


async def test_a_forged_flood_and_a_poison_event_are_absorbed_and_the_next_signal_arrives(
    nc: NATS,
) -> None:
    js = nc.jetstream()
    async with Running(nc, risk=RISK) as monitor:
        for task in range(FAKE_TASKS):
            files = fake_task_files(task)
            await publish(nc, loop_event("files", task=f"forged-{task}", files=files))
        for ev in poison_events():
            await publish(nc, ev)
        await publish(nc, loop_event("iteration", task="real", event_id="real-1", retries=4))

        def real_signal_arrived() -> bool:
            return monitor.stats.signals >= 1

        await until(real_signal_arrived, "the real task's escalation", 120.0)
        await until(lambda: monitor.stats.dead_letters >= 1, "the poison dead-lettered", 120.0)
        # After the poison: the monitor has moved on and still signals.
        await publish(nc, loop_event("context", task="real", event_id="real-2", utilization=0.9))
        await until(lambda: monitor.stats.signals >= 2, "the real task's pause", 120.0)

    for subject, reason in (("escalate", "retry_limit"), ("pause", "context_pressure")):
        signal_msg = await js.get_last_msg(SIGNAL_STREAM, f"user.signal.{subject}")
        signal = UserSignal.from_json(signal_msg.data or b"")
        assert (signal.task_id, signal.reason) == ("real", reason)

    dead = await js.get_last_msg(DEAD_LETTER_STREAM, "semspec.deadletter.monitor")
    assert dead.headers is not None
    assert dead.headers[ERROR_HEADER].startswith(f"failed {MAX_DELIVER} deliveries")
    assert b'"event_id":"poison-2"' in (dead.data or b"")

    sizes = await stored_sizes(nc)
    assert "index.files" not in sizes
    file_keys = sum(1 for key in sizes if key.startswith("file."))
    # The first poison event was fine on its own; only the second failed.
    assert file_keys == FAKE_TASKS * FILES_PER_TASK + POISON_HALF
    # The flood's index would be well over 1 MiB as one value; no stored value is near it.
    assert sum(sizes[k] for k in sizes if k.startswith("file.")) > 1024 * 1024
    assert max(sizes[k] for k in sizes if k.startswith("file.")) < 1024
    assert max(sizes[k] for k in sizes if k.startswith("task.forged")) < 8 * 1024


async def test_an_old_single_key_index_is_dropped_on_start(nc: NATS) -> None:
    kv = await ensure_bucket(nc.jetstream())
    await kv.put("index.files", b'{"x.py":["gone"]}')
    async with Running(nc, risk=RISK):
        pass
    assert "index.files" not in await stored_sizes(nc)


async def test_an_event_over_the_size_limit_is_dead_lettered_at_once(nc: NATS) -> None:
    events = StreamLimits(max_age_s=3_600, max_bytes=1024 * 1024, max_msg_size=2_000)
    risk = RiskConfig(ack_wait_s=2.0, limits=RiskLimits(events=events))
    big = loop_event("files", task="big", files=[f"f{n:04d}.py" for n in range(400)])
    # Stored while the stream still had the default limit; the monitor's own check refuses it.
    await publish(nc, big)
    async with Running(nc, risk=risk) as monitor:
        await until(lambda: monitor.stats.dead_letters == 1, "over-large event refused", 120.0)
        assert monitor.stats.events == 0
    dead = await nc.jetstream().get_last_msg(DEAD_LETTER_STREAM, "semspec.deadletter.monitor")
    assert dead.headers is not None and "over the 2000 limit" in dead.headers[ERROR_HEADER]


async def test_every_stream_and_the_bucket_get_the_configured_limits(nc: NATS) -> None:
    async with Running(nc, risk=RISK):
        pass
    js = nc.jetstream()
    limits = RISK.limits
    for stream, want in (
        ("AGENT_MONITOR", limits.events),
        (SIGNAL_STREAM, limits.signals),
        (DEAD_LETTER_STREAM, limits.dead_letters),
        (f"KV_{STATE_BUCKET}", limits.state),
    ):
        config = (await js.stream_info(stream)).config
        got = (config.max_age, config.max_bytes, config.max_msg_size)
        assert got == (want.max_age_s, want.max_bytes, want.max_msg_size), stream
    consumer = await js.consumer_info("AGENT_MONITOR", "risk-monitor")
    assert consumer.config.max_deliver == MAX_DELIVER


async def test_tasks_whose_workflow_closed_or_never_existed_leave_the_active_set(
    nc: NATS, temporal_client: Client, task_queue: str
) -> None:
    # No worker polls this queue: the workflows stay open until terminated.
    for task in ("open", "closed"):
        await temporal_client.start_workflow(
            "NoSuchWorkflow", id=task_workflow_id(task), task_queue=task_queue
        )
    await temporal_client.get_workflow_handle(task_workflow_id("closed")).terminate("done")
    liveness = TemporalLiveness(lambda: _connected(temporal_client))
    risk = RiskConfig(ack_wait_s=2.0, reconcile_interval_s=0.2)
    async with Running(nc, risk=risk, liveness=liveness) as monitor:
        for task in ("open", "closed", "forged"):
            await publish(nc, loop_event("files", task=task, files=[f"{task}.py", "shared.py"]))
        await until(lambda: monitor.stats.retired == 2, "closed and forged tasks retired", 120.0)
        # The retired tasks left the file index: a new task on their file conflicts only with
        # the task still running.
        await publish(nc, loop_event("files", task="late", files=["closed.py", "shared.py"]))
        await until(lambda: monitor.stats.events == 4, "the late task's event", 120.0)
    states = {
        s.task_id: s for s in (await StateStore(await ensure_bucket(nc.jetstream())).scan()).states
    }
    assert {t for t, s in states.items() if s.active} == {"open", "late"}
    index = (await StateStore(await ensure_bucket(nc.jetstream())).scan()).index
    assert index.files == {
        "closed.py": ["late"],
        "open.py": ["open"],
        "shared.py": ["late", "open"],
    }


async def test_a_task_with_no_event_for_idle_task_s_leaves_the_active_set(nc: NATS) -> None:
    risk = RiskConfig(ack_wait_s=2.0, reconcile_interval_s=0.2, idle_task_s=1.0)
    async with Running(nc, risk=risk) as monitor:
        await publish(nc, loop_event("files", task="quiet", files=["a.py"]))
        await until(lambda: monitor.stats.retired == 1, "the idle task retired", 120.0)
    stored = await StateStore(await ensure_bucket(nc.jetstream())).load_task("quiet")
    assert stored is not None and not stored.active


async def _connected(client: Client) -> Client:
    return client


async def test_streams_and_a_consumer_made_without_limits_get_them_when_the_monitor_starts(
    nc: NATS,
) -> None:
    js = nc.jetstream()
    # What an older semspec (or the worker's publisher before this change) left behind.
    await js.delete_stream("AGENT_MONITOR")
    await js.add_stream(StreamConfig(name="AGENT_MONITOR", subjects=["agent.monitor.*"]))
    old = ConsumerConfig(durable_name="risk-monitor", ack_policy=AckPolicy.EXPLICIT, ack_wait=30)
    await js.add_consumer("AGENT_MONITOR", old)
    async with Running(nc, risk=RISK):
        pass
    config = (await js.stream_info("AGENT_MONITOR")).config
    want = RISK.limits.events
    assert (config.max_age, config.max_bytes, config.max_msg_size) == (
        want.max_age_s,
        want.max_bytes,
        want.max_msg_size,
    )
    consumer = await js.consumer_info("AGENT_MONITOR", "risk-monitor")
    assert consumer.config.max_deliver == MAX_DELIVER
