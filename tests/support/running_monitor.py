"""A risk monitor consuming in the background of a test, stopped when its block ends."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS
from temporalio.client import Client

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor, WorkflowLiveness
from semspec.processors.signal_bridge import TemporalSignalBridge
from tests.support.owner import OWNER

TEST_RISK = RiskConfig(ack_wait_s=2.0)
"""The defaults, but a message a test leaves unacknowledged comes back in two seconds."""


class Running:
    """``async with Running(nc) as monitor``; given a Temporal client it signals workflows too."""

    def __init__(
        self,
        nc: NATS,
        client: Client | None = None,
        risk: RiskConfig = TEST_RISK,
        liveness: WorkflowLiveness | None = None,
    ) -> None:
        bridge = TemporalSignalBridge.for_client(client, OWNER.sign) if client is not None else None
        self.monitor = RiskMonitor(nc, risk, bridge, liveness=liveness)
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RiskMonitor:
        await self.monitor.start()
        self.task = asyncio.create_task(self.monitor.run(self.stop, idle_wait=0.05))
        return self.monitor

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        assert self.task is not None
        await self.task
