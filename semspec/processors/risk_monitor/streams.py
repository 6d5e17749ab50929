"""Create (idempotently) the streams, the durable consumer and the state bucket the monitor uses.

Every stream and the bucket get the bounds of ``risk.limits`` (age, bytes, message size), also
when they already exist: a stream made by an older semspec, or by the task loop's publisher
before the monitor started, is brought to the configured limits here. This module is the one
place those limits are set.
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from semspec.core.config.models import RiskConfig, StreamLimits
from semspec.vocabulary.subjects import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    MONITOR_STREAM,
    MONITOR_SUBJECTS,
    SIGNAL_STREAM,
    SIGNAL_SUBJECTS,
)

STATE_BUCKET = "SEMSPEC_RISK"
CONSUMER = "risk-monitor"


def _bounded(
    name: str, subject: str, limits: StreamLimits, duplicate_window: float = 0
) -> StreamConfig:
    return StreamConfig(
        name=name,
        subjects=[subject],
        storage=StorageType.FILE,
        max_age=limits.max_age_s,
        max_bytes=limits.max_bytes,
        max_msg_size=limits.max_msg_size,
        duplicate_window=duplicate_window,
    )


async def ensure_streams(js: JetStreamContext, risk: RiskConfig, *, update: bool = True) -> None:
    """Make sure the monitor, signal and dead-letter streams exist with ``risk.limits``.

    With ``update`` false, existing streams are left as they are (the task loop's publisher:
    the monitor, which reads the same config, applies the limits when it starts).
    """
    limits = risk.limits
    await _ensure_stream(js, _bounded(MONITOR_STREAM, MONITOR_SUBJECTS, limits.events), update)
    # A long duplicate window: a signal re-published after a crash must still be recognised.
    window = risk.signal_dedupe_window_s
    signals = _bounded(SIGNAL_STREAM, SIGNAL_SUBJECTS, limits.signals, duplicate_window=window)
    await _ensure_stream(js, signals, update)
    dead = _bounded(DEAD_LETTER_STREAM, DEAD_LETTER_SUBJECT, limits.dead_letters)
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
    if update:
        await _apply_limits(js, info.config, config)


async def _apply_limits(js: JetStreamContext, have: StreamConfig, want: StreamConfig) -> None:
    """Update ``have`` to the bounds of ``want`` when they differ (one stream update)."""
    changes = {
        "max_age": want.max_age,
        "max_bytes": want.max_bytes,
        "max_msg_size": want.max_msg_size,
        "discard": DiscardPolicy.OLD,
    }
    # Signal dedupe needs the longer window; another creator may have used the 2-minute default.
    if want.duplicate_window and (have.duplicate_window or 0) < want.duplicate_window:
        changes["duplicate_window"] = want.duplicate_window
    if any(getattr(have, key) != value for key, value in changes.items()):
        await js.update_stream(have.evolve(**changes))


async def ensure_consumer(js: JetStreamContext, risk: RiskConfig, name: str = CONSUMER) -> None:
    """Create or update the durable pull consumer on the monitor stream (explicit acks).

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
    js: JetStreamContext, bucket: str = STATE_BUCKET, risk: RiskConfig | None = None
) -> KeyValue:
    """The KV bucket of task states and the file index, created on first use, with limits.

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
        )
    stream = f"KV_{bucket}"
    info = await js.stream_info(stream)
    want = StreamConfig(
        name=stream,
        max_age=limits.max_age_s,
        max_bytes=limits.max_bytes,
        max_msg_size=limits.max_msg_size,
    )
    await _apply_limits(js, info.config, want)
    return kv
