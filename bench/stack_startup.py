"""How long the embedded stack takes to come up, and the floor of one workflow round trip.

Measured in one run, each beside its baseline, as medians of ``ROUNDS`` interleaved rounds:

1. ``up_s``: ``python -m semspec up`` in a fresh repository (cold: no run directory, no data)
   until every service is healthy (NATS, Temporal, the worker, the risk monitor), as a user
   sees it. Baselines: ``up_core_s``, the same supervisor starting only NATS and Temporal (no
   Python services), and ``bare_s``, starting ``nats-server`` and ``temporal server start-dev``
   by hand with subprocess (both at once, as the supervisor does) and polling their client
   ports. ``up_ratio = up_core_s / bare_s`` is what
   our launch plans and health checks cost over the bare binaries.
2. ``noop_workflow_ms``: median of 20 ``execute_workflow`` round trips of a workflow that does
   nothing, on the Temporal that ``semspec up`` started, served by a worker in this process
   (sandboxed, like the real worker). Baseline ``rpc_ms``: median of 20 ``DescribeNamespace``
   RPCs on the same client. ``noop_ratio = noop_workflow_ms / rpc_ms``. This round trip is the
   floor later benchmarks of the task loop compare against.

Every service started here is stopped here (``semspec down`` or by its own handle), on loopback
ports picked free. The last line printed is one JSON object. ``--quick`` (one round, what a test
runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pygit2
import yaml
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.worker import Worker

from semspec.core.config import load_config
from semspec.core.logging import configure_logging
from semspec.core.run_folder import load_records
from semspec.services.ports import free_port, tcp_answers
from semspec.services.specs import NatsSpec, TemporalSpec, binary
from semspec.services.supervisor import Supervisor

# The sandbox re-imports a workflow's module by name, which a script run as __main__ is not.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _noop_workflow import NoopWorkflow

ROUND_TRIPS = 20
ROUNDS = 3
"""Cold starts of each kind; the figures are medians over these rounds."""
ANY_PORTS = {"nats": {"port": 0}, "temporal": {"port": 0, "ui_port": 0}}


def fresh_repo(root: Path) -> Path:
    """A git repository with a config asking for services on free ports."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    pygit2.init_repository(str(repo), initial_head="main")
    config = repo / ".semspec" / "config.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump({"services": ANY_PORTS}), encoding="utf-8")
    return repo


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180, check=False)


def wait_port(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while not tcp_answers("127.0.0.1", port, timeout=0.2):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{proc.args!r} did not open port {port}")
        time.sleep(0.02)


def bare_binaries(root: Path) -> float:
    """Seconds to start both binaries by hand and see their client ports answer."""
    nats_port, grpc = free_port(), free_port()
    ui, http, metrics = free_port(), free_port(), free_port()
    nats_argv = [binary("nats-server"), "-js", "-sd", str(root / "nats"), "-a", "127.0.0.1"]
    nats_argv += ["-p", str(nats_port)]
    temporal_argv = [binary("temporal"), "server", "start-dev", "--ip", "127.0.0.1"]
    temporal_argv += ["--db-filename", str(root / "temporal.db"), "--port", str(grpc)]
    temporal_argv += ["--ui-port", str(ui), "--http-port", str(http)]
    temporal_argv += ["--metrics-port", str(metrics), "--log-level", "warn"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        started = time.perf_counter()
        deadline = time.monotonic() + 60
        # Both at once, as the supervisor does; then wait for each client port.
        for argv in (nats_argv, temporal_argv):
            procs.append(
                subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
        wait_port(nats_port, procs[0], deadline)
        wait_port(grpc, procs[1], deadline)
        return time.perf_counter() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


def core_up(root: Path) -> float:
    """Seconds for the supervisor to bring NATS and Temporal to healthy (no Python services)."""
    repo = fresh_repo(root)
    supervisor = Supervisor(load_config(repo, environ={}), repo, specs=[NatsSpec(), TemporalSpec()])
    try:
        started = time.perf_counter()
        supervisor.up()
        return time.perf_counter() - started
    finally:
        supervisor.down()


async def round_trips(address: str) -> tuple[float, float]:
    """Median milliseconds of a no-op workflow and of a DescribeNamespace RPC."""
    client = await Client.connect(address)
    queue = f"bench-{uuid.uuid4()}"
    rpc: list[float] = []
    noop: list[float] = []
    request = DescribeNamespaceRequest(namespace=client.namespace)
    async with Worker(client, task_queue=queue, workflows=[NoopWorkflow]):
        # One of each first: connection set-up and the worker's first poll are not the floor.
        await client.workflow_service.describe_namespace(request)
        await client.execute_workflow(NoopWorkflow.run, id=f"warm-{queue}", task_queue=queue)
        for n in range(ROUND_TRIPS):
            started = time.perf_counter()
            await client.workflow_service.describe_namespace(request)
            rpc.append(time.perf_counter() - started)
            started = time.perf_counter()
            await client.execute_workflow(
                NoopWorkflow.run, id=f"noop-{n}-{queue}", task_queue=queue
            )
            noop.append(time.perf_counter() - started)
    return statistics.median(noop) * 1000, statistics.median(rpc) * 1000


def full_up(root: Path) -> tuple[float, float, float]:
    """Seconds of a cold ``semspec up``, then the no-op and RPC medians on its Temporal."""
    repo = fresh_repo(root)
    try:
        started = time.perf_counter()
        done = cli(repo, "up", "--json")
        up_s = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"semspec up failed: {done.stderr}")
        address = load_records(repo / ".semspec" / "run")["temporal"].address
        noop_ms, rpc_ms = asyncio.run(round_trips(address))
        return up_s, noop_ms, rpc_ms
    finally:
        down = cli(repo, "down")
        if down.returncode != 0:
            print(f"warning: semspec down: {down.stderr}", file=sys.stderr)


def main() -> None:
    configure_logging("console", "WARNING")
    # Read both binaries once so neither side pays for a cold page cache.
    NatsSpec().version()
    TemporalSpec().version()
    bare: list[float] = []
    core: list[float] = []
    full: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="semspec-bench-") as tmp:
        root = Path(tmp)
        # Interleaved rounds, so a busy moment on the machine hits every side alike.
        for n in range(ROUNDS):
            bare.append(bare_binaries(root / f"bare-{n}"))
            core.append(core_up(root / f"core-{n}"))
            full.append(full_up(root / f"full-{n}"))
    bare_s, up_core_s = statistics.median(bare), statistics.median(core)
    up_s = statistics.median(f[0] for f in full)
    noop_ms = statistics.median(f[1] for f in full)
    rpc_ms = statistics.median(f[2] for f in full)
    result: dict[str, Any] = {
        "up_s": round(up_s, 3),
        "up_core_s": round(up_core_s, 3),
        "bare_s": round(bare_s, 3),
        "up_ratio": round(up_core_s / bare_s, 2),
        "noop_workflow_ms": round(noop_ms, 2),
        "rpc_ms": round(rpc_ms, 2),
        "noop_ratio": round(noop_ms / rpc_ms, 2),
    }
    print(f"bare binaries, ports open:        {bare_s:7.2f} s")
    print(f"supervisor, NATS + Temporal:      {up_core_s:7.2f} s   ratio {up_core_s / bare_s:.2f}x")
    print(f"`semspec up`, all four services:  {up_s:7.2f} s   ({up_s / bare_s:.2f}x bare)")
    print(f"DescribeNamespace RPC (median):   {rpc_ms:7.2f} ms")
    print(f"no-op workflow round trip:        {noop_ms:7.2f} ms   ratio {noop_ms / rpc_ms:.2f}x")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, 3 round trips")
    if parser.parse_args().quick:
        ROUNDS, ROUND_TRIPS = 1, 3
    main()
