"""The monitor's Temporal adapters share one client wrapper (``risk_monitor/temporal_client.py``):
connected on first use, connected again after a failure, never raising. Against a real Temporal
dev server; the unreachable one is a free loopback port with nothing on it."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from temporalio.client import Client

from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
from semspec.processors.risk_monitor.temporal_client import LazyTemporal, NoAnswer
from semspec.processors.risk_monitor.workflow_liveness import TemporalLiveness
from semspec.services.ports import free_port
from tests.support.monitor_events import pause_signal


def down_then_up(client: Client) -> tuple[Callable[[], Awaitable[Client]], list[str]]:
    """A connect that fails the first time (nothing listens) and gives ``client`` after."""
    tries: list[str] = []

    async def connect() -> Client:
        tries.append("connect")
        if len(tries) == 1:
            return await Client.connect(f"127.0.0.1:{free_port()}")
        return client

    return connect, tries


async def test_a_failed_connect_is_an_answer_and_the_next_call_connects_again(
    temporal_client: Client,
) -> None:
    connect, tries = down_then_up(temporal_client)
    temporal = LazyTemporal(connect)

    async def namespace(client: Client) -> str:
        return client.namespace

    first = await temporal.call(namespace)
    second = await temporal.call(namespace)
    third = await temporal.call(namespace)

    assert isinstance(first, NoAnswer) and not first.not_found and first.error
    assert (second, third) == (temporal_client.namespace, temporal_client.namespace)
    assert tries == ["connect", "connect"]  # kept once it worked


async def test_a_workflow_that_never_ran_is_not_open(temporal_client: Client) -> None:
    connect, _ = down_then_up(temporal_client)
    liveness = TemporalLiveness(connect)
    task = f"never-{uuid.uuid4().hex[:8]}"

    assert await liveness.is_open(task) is None  # Temporal not reached: unknown
    assert await liveness.is_open(task) is False


async def test_a_key_that_cannot_sign_is_a_failed_delivery_not_a_crash(
    temporal_client: Client,
) -> None:
    def broken_key(purpose: str, fields: Mapping[str, Any]) -> str:
        raise OSError("the owner key file went away")

    bridge = TemporalSignalBridge.for_client(temporal_client, broken_key)
    task = f"t-{uuid.uuid4().hex[:8]}"
    assert await bridge.deliver(task, "pause", pause_signal(task)) is False
