"""Create (idempotently) the streams, the durable consumer and the state bucket the monitor uses."""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from semspec.core.config.models import RiskConfig
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


async def ensure_streams(js: JetStreamContext, risk: RiskConfig) -> None:
    """Make sure the monitor, signal and dead-letter streams exist; existing ones are kept."""
    await _ensure_stream(
        js, StreamConfig(name=MONITOR_STREAM, subjects=[MONITOR_SUBJECTS], storage=StorageType.FILE)
    )
    # A long duplicate window: a signal re-published after a crash must still be recognised.
    await _ensure_stream(
        js,
        StreamConfig(
            name=SIGNAL_STREAM,
            subjects=[SIGNAL_SUBJECTS],
            storage=StorageType.FILE,
            duplicate_window=risk.signal_dedupe_window_s,
        ),
    )
    await _ensure_stream(
        js,
        StreamConfig(
            name=DEAD_LETTER_STREAM, subjects=[DEAD_LETTER_SUBJECT], storage=StorageType.FILE
        ),
    )


async def _ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
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
    # Another creator may have used the 2-minute default; signal dedupe needs the longer window.
    if config.duplicate_window and info.config.duplicate_window < config.duplicate_window:
        await js.update_stream(info.config.evolve(duplicate_window=config.duplicate_window))


async def ensure_consumer(js: JetStreamContext, risk: RiskConfig, name: str = CONSUMER) -> None:
    """Create or update the durable pull consumer on the monitor stream (explicit acks)."""
    await js.add_consumer(
        MONITOR_STREAM,
        ConsumerConfig(
            name=name,
            durable_name=name,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=risk.ack_wait_s,
            max_ack_pending=risk.max_ack_pending,
        ),
    )


async def ensure_bucket(js: JetStreamContext, bucket: str = STATE_BUCKET) -> KeyValue:
    """The KV bucket of task states and the file index, created on first use."""
    try:
        return await js.key_value(bucket)
    except BucketNotFoundError:
        return await js.create_key_value(bucket=bucket, history=1, direct=True)
