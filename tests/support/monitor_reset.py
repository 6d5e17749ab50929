"""Start the risk monitor's JetStream side from nothing: for tests and benchmarks that run
monitors one after another on one NATS."""

from __future__ import annotations

import contextlib

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from semspec.core.config.models import RiskConfig
from semspec.vocabulary.streams import LEASE_BUCKET, STATE_BUCKET, ensure_streams
from semspec.vocabulary.subjects import DEAD_LETTER_STREAM, MONITOR_STREAM, SIGNAL_STREAM


async def fresh_monitor_streams(js: JetStreamContext, risk: RiskConfig, replicas: int = 1) -> None:
    """Delete the event, signal and dead-letter streams, the state and the lease (with the
    monitor's consumer), then make the streams again with ``replicas``."""
    streams = (MONITOR_STREAM, SIGNAL_STREAM, DEAD_LETTER_STREAM)
    for stream in (*streams, f"KV_{STATE_BUCKET}", f"KV_{LEASE_BUCKET}"):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await ensure_streams(js, risk, replicas=replicas)
