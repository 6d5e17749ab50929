"""Create (idempotently) the streams, the durable consumer and the state bucket the monitor uses.

Every stream and the bucket get the bounds of ``risk.limits`` (age, bytes, message size) and
``services.nats.replicas``, also when they already exist: a stream made by an older semspec, or
by the task loop's publisher before the monitor started, is brought to the configured limits and
replica count here. This module is the one place those are set.
"""

from __future__ import annotations

import asyncio
import time

from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RePublish,
    StorageType,
    StreamConfig,
    SubjectTransform,
)
from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from semspec.core.config.models import RiskConfig, StreamLimits
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    MONITOR_STREAM,
    MONITOR_SUBJECTS,
    SIGNAL_INTAKE_SUBJECTS,
    SIGNAL_STREAM,
    SIGNAL_SUBJECTS,
)

STATE_BUCKET = "SEMSPEC_RISK"
LEASE_BUCKET = "SEMSPEC_MONITOR_LEASE"
CONSUMER = "risk-monitor"


def _bounded(
    name: str, subject: str, limits: StreamLimits, duplicate_window: float = 0, replicas: int = 1
) -> StreamConfig:
    return StreamConfig(
        name=name,
        subjects=[subject],
        storage=StorageType.FILE,
        max_age=limits.max_age_s,
        max_bytes=limits.max_bytes,
        max_msg_size=limits.max_msg_size,
        duplicate_window=duplicate_window,
        num_replicas=replicas,
    )


async def ensure_streams(
    js: JetStreamContext, risk: RiskConfig, *, update: bool = True, replicas: int = 1
) -> None:
    """Make sure the monitor, signal and dead-letter streams exist with ``risk.limits`` and
    ``replicas`` (``services.nats.replicas``).

    With ``update`` false, existing streams are left as they are (the task loop's publisher:
    the monitor and ``semspec up``, which read the same config, apply it to them).
    """
    limits = risk.limits
    events = _bounded(MONITOR_STREAM, MONITOR_SUBJECTS, limits.events, replicas=replicas)
    await _ensure_stream(js, events, update)
    # A long duplicate window: a signal re-published after a crash must still be recognised.
    window = risk.signal_dedupe_window_s
    signals = _bounded(
        SIGNAL_STREAM, SIGNAL_INTAKE_SUBJECTS, limits.signals, window, replicas
    ).evolve(
        # Stored as user.signal.<level> (what readers of the stream filter on) and republished
        # there once stored: a signal the dedupe drops never reaches a plain subscriber.
        subject_transform=SubjectTransform(src=SIGNAL_INTAKE_SUBJECTS, dest=SIGNAL_SUBJECTS),
        republish=RePublish(src=SIGNAL_SUBJECTS, dest=SIGNAL_SUBJECTS),
    )
    await _ensure_stream(js, signals, update)
    dead = _bounded(DEAD_LETTER_STREAM, DEAD_LETTER_SUBJECT, limits.dead_letters, 0, replicas)
    await _ensure_stream(js, dead, update)


async def _ensure_stream(js: JetStreamContext, config: StreamConfig, update: bool) -> None:
    assert config.name is not None
    try:
        info = await js.stream_info(config.name)
    except NotFoundError:
        try:
            await js.add_stream(config)
            return
        except BadRequestError:
            # Someone else (the workflow's publisher) created it meanwhile with its own settings.
            info = await js.stream_info(config.name)
    if _routed(info.config) != _routed(config):
        # A stream made by an older semspec took signals on user.signal.> itself: without this
        # update (whatever ``update`` says) publishes to the intake subject would find no stream.
        info.config = info.config.evolve(
            subjects=config.subjects,
            subject_transform=config.subject_transform,
            republish=config.republish,
        )
        await js.update_stream(info.config)
    if update:
        await _apply_limits(js, info.config, config)


def _routed(config: StreamConfig) -> tuple[object, ...]:
    """Where a stream takes messages from and where it stores and republishes them."""
    return (config.subjects, config.subject_transform, config.republish)


async def _apply_limits(js: JetStreamContext, have: StreamConfig, want: StreamConfig) -> None:
    """Update ``have`` to the bounds and replica count of ``want`` when they differ (one
    stream update; a cluster adds or drops the replicas behind it)."""
    replicas = want.num_replicas or 1
    changes = {
        "max_age": want.max_age,
        "max_bytes": want.max_bytes,
        "max_msg_size": want.max_msg_size,
        "discard": DiscardPolicy.OLD,
        "num_replicas": replicas,
    }
    # Signal dedupe needs the longer window; another creator may have used the 2-minute default.
    if want.duplicate_window and (have.duplicate_window or 0) < want.duplicate_window:
        changes["duplicate_window"] = want.duplicate_window
    if any(getattr(have, key) != value for key, value in changes.items()):
        await js.update_stream(have.evolve(**changes))
        if (have.num_replicas or 1) != replicas:
            await _await_replicas(js, want.name or "", replicas)


RESCALE_WAIT_S = 15.0
"""How long a stream whose replica count changed may take to place and catch up its replicas."""


async def _await_replicas(js: JetStreamContext, stream: str, replicas: int) -> None:
    """Wait (bounded by ``RESCALE_WAIT_S``) until ``stream`` has ``replicas`` current copies:
    the server refuses consumers on a stream while it moves."""
    deadline = time.monotonic() + RESCALE_WAIT_S
    while time.monotonic() < deadline:
        cluster = (await js.stream_info(stream)).cluster
        followers = (cluster.replicas or []) if cluster else []
        settled = all(peer.current for peer in followers)
        if len(followers) == replicas - 1 and settled and cluster and cluster.leader:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"stream {stream} did not reach {replicas} current replicas")


async def ensure_consumer(js: JetStreamContext, risk: RiskConfig, name: str = CONSUMER) -> None:
    """Create or update the durable pull consumer on the monitor stream (explicit acks). It sets
    no replica count of its own, so it has as many as its stream, also after the stream's count
    changes (a count of its own could not be raised before the stream's new replicas exist).

    ``max_deliver`` bounds redelivery: the processor dead-letters an event on its last
    delivery, and the server would stop delivering it after that anyway.
    """
    await js.add_consumer(
        MONITOR_STREAM,
        ConsumerConfig(
            name=name,
            durable_name=name,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=risk.ack_wait_s,
            max_ack_pending=risk.max_ack_pending,
            max_deliver=risk.max_deliver,
        ),
    )


async def ensure_bucket(
    js: JetStreamContext,
    bucket: str = STATE_BUCKET,
    risk: RiskConfig | None = None,
    replicas: int = 1,
) -> KeyValue:
    """The KV bucket of task states and the file index, created on first use, with limits and
    ``replicas``.

    The bucket drops its oldest values when full (rather than refusing new ones, the KV
    default), so a full bucket costs the state of long-finished tasks, not the monitor.
    """
    limits = (risk or RiskConfig()).limits.state
    try:
        kv = await js.key_value(bucket)
    except BucketNotFoundError:
        kv = await js.create_key_value(
            bucket=bucket,
            history=1,
            direct=True,
            ttl=limits.max_age_s,
            max_bytes=limits.max_bytes,
            max_value_size=limits.max_msg_size,
            replicas=replicas,
        )
    stream = f"KV_{bucket}"
    info = await js.stream_info(stream)
    want = StreamConfig(
        name=stream,
        max_age=limits.max_age_s,
        max_bytes=limits.max_bytes,
        max_msg_size=limits.max_msg_size,
        num_replicas=replicas,
    )
    await _apply_limits(js, info.config, want)
    return kv


async def ensure_lease_bucket(js: JetStreamContext, ttl_s: float, replicas: int = 1) -> KeyValue:
    """The bucket of the active monitor's lease: one key, gone ``ttl_s`` after its last write
    (ADR 0005); created on first use, its age bound brought to ``ttl_s`` when it differs."""
    try:
        kv = await js.key_value(LEASE_BUCKET)
    except BucketNotFoundError:
        try:
            kv = await js.create_key_value(
                bucket=LEASE_BUCKET, history=1, ttl=ttl_s, replicas=replicas
            )
        except BadRequestError:  # another monitor made it meanwhile, with another ttl
            kv = await js.key_value(LEASE_BUCKET)
    info = await js.stream_info(f"KV_{LEASE_BUCKET}")
    if info.config.max_age != ttl_s or info.config.num_replicas != replicas:
        # The server refuses a dedupe window longer than the age bound.
        window = min(info.config.duplicate_window or ttl_s, ttl_s)
        changed = info.config.evolve(max_age=ttl_s, duplicate_window=window, num_replicas=replicas)
        await js.update_stream(changed)
    return kv
