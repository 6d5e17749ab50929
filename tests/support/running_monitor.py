"""A risk monitor consuming in the background of a test, stopped when its block ends; or a
``semspec monitor`` process the test starts and stops by PID."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from nats.aio.client import Client as NATS
from temporalio.client import Client

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor, WorkflowLiveness
from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
from semspec.services.presence import ready_file
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
        replicas: int = 1,
    ) -> None:
        bridge = TemporalSignalBridge.for_client(client, OWNER.sign) if client is not None else None
        self.monitor = RiskMonitor(nc, risk, bridge, liveness=liveness, replicas=replicas)
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


def monitor_process(
    repo: Path, nats_url: str, temporal_address: str, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``semspec monitor`` for ``repo`` with the settings ``env`` adds (``SEMSPEC_*``);
    its log goes to ``repo/monitor.log``."""
    settings = {
        **os.environ,
        "SEMSPEC_SERVICES__NATS__URL": nats_url,
        "SEMSPEC_SERVICES__TEMPORAL__ADDRESS": temporal_address,
        "SEMSPEC_LOG_FORMAT": "json",
        **env,
    }
    log = (repo / "monitor.log").open("ab")
    try:
        argv = [sys.executable, "-m", "semspec", "monitor", "--repo", str(repo)]
        return subprocess.Popen(argv, env=settings, stdout=log, stderr=subprocess.STDOUT)
    finally:
        log.close()


async def wait_ready(repo: Path, proc: subprocess.Popen[bytes]) -> None:
    """Wait (bounded) until the monitor process announced itself in ``repo``'s run folder."""
    marker = ready_file(repo / ".semspec" / "run", "monitor", proc.pid)
    for _ in range(600):
        if marker.exists():
            return
        assert proc.poll() is None, (repo / "monitor.log").read_text()
        await asyncio.sleep(0.05)
    raise AssertionError("monitor never became ready")
