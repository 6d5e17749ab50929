"""Run the risk monitor as a service: connect, serve until SIGTERM/SIGINT, stop cleanly.

With telemetry on, the monitor exports its metrics (docs/telemetry.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATSClient

from semspec.core import telemetry
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.logging import logger_for
from semspec.core.nats_connect import connect_nats
from semspec.core.owner_key import load_owner_key
from semspec.core.run_folder import run_dir_of
from semspec.processors.risk_monitor.metrics import MonitorMeter
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
from semspec.processors.risk_monitor.workflow_liveness import TemporalLiveness
from semspec.services.connect import Endpoints, nats_options, resolve_endpoints, temporal_client
from semspec.services.follow import relay, watch_moves
from semspec.services.presence import Presence, announce, default_identity, withdraw

"""How often a monitor on the stack's own services re-reads the run folder for their addresses."""
JETSTREAM_WAIT_S = 60.0
"""How long a starting monitor waits for JetStream to answer: a cluster that just lost a node
elects new stream leaders within seconds, and meanwhile its API times out or says unavailable."""
_RETRY_EVERY_S = 1.0


log = logger_for("risk-monitor")


async def serve(config: SemspecConfig, repo: Path) -> None:
    """Run the monitor for ``repo`` until SIGTERM or SIGINT; the batch in hand is finished.

    A monitor on the stack's own services (no external address configured) follows them when
    ``semspec up`` starts them elsewhere: it re-reads the run folder every ``MOVED_CHECK_S``
    and, when an address changed, stops as on SIGTERM and serves again at the new one, so a
    monitor started by hand never stays on a dead port (issue 26)."""
    metrics = telemetry.setup(config, "monitor")
    meter = MonitorMeter(metrics.monitor_metrics())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        while not stop.is_set():
            endpoints = resolve_endpoints(config, repo)
            moved = await _serve_at(config, repo, endpoints, meter, metrics.enabled, stop)
            if not moved:
                return
            log().warning("the stack's services moved: following them", **moved)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await asyncio.to_thread(metrics.shutdown)  # a last export of the metrics


async def _serve_at(
    config: SemspecConfig,
    repo: Path,
    endpoints: Endpoints,
    meter: MonitorMeter,
    with_lag: bool,
    stop: asyncio.Event,
) -> dict[str, str]:
    """Serve at ``endpoints`` until ``stop`` is set (returns no changes) or the run folder
    names other addresses (returns ``{service: "old -> new"}``)."""
    nc = await connect_nats(
        endpoints.nats_url,
        nats_options(config, repo),
        "semspec-monitor",
        external=endpoints.nats_external,
    )
    # Blocking file I/O, but before the loop serves anything: nothing waits on it yet.
    owner = load_owner_key(config, repo)
    bridge = TemporalSignalBridge(
        lambda: temporal_client(config, endpoints.temporal_address), owner.sign
    )
    # Closed workflows leave the monitor's active set (see RiskMonitor.reconcile).
    liveness = TemporalLiveness(lambda: temporal_client(config, endpoints.temporal_address))
    identity = default_identity()
    # Several monitors may serve one stack: one consumes, the others stand by (ADR 0005).
    monitor = RiskMonitor(
        nc,
        config.risk,
        bridge,
        liveness=liveness,
        identity=identity,
        replicas=config.services.nats.replicas,
        meter=meter,
    )
    run_dir = run_dir_of(config, repo)
    presence: Presence | None = None
    ending = asyncio.Event()
    moved: dict[str, str] = {}
    helpers = [asyncio.create_task(relay(stop, ending))]
    try:
        await _start(monitor, ending)
        if with_lag:
            helpers.append(
                asyncio.create_task(
                    _watch_lag(nc, meter, config.telemetry.metrics_interval_s, ending)
                )
            )
        # External addresses come from the config and never move; the stack's own may.
        used = endpoints.addresses()
        helpers.append(asyncio.create_task(watch_moves(config, repo, used, moved, ending)))
        presence = await asyncio.to_thread(
            announce, run_dir, "monitor", identity, "", endpoints.addresses()
        )
        log().info("consuming", nats=endpoints.nats_url, temporal=endpoints.temporal_address)
        await monitor.run(ending)
        log().info("stopped", **vars(monitor.stats))
    finally:
        for helper in helpers:
            helper.cancel()
        if presence is not None:
            withdraw(run_dir, presence)
        if moved:
            with contextlib.suppress(OSError):  # the old server is gone: nothing to drain into
                await nc.close()
        else:
            await nc.drain()
    return moved


async def _watch_lag(
    nc: NATSClient, meter: MonitorMeter, every_s: float, stop: asyncio.Event
) -> None:
    """Record the consumer's lag every ``every_s`` until ``stop``; a failed ask skips a turn."""
    js = nc.jetstream()
    while not stop.is_set():
        try:
            await meter.measure_lag(js)
        except nats.errors.Error as exc:
            log().debug("consumer lag not measured", error=str(exc))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


async def _start(monitor: RiskMonitor, stop: asyncio.Event) -> None:
    """``monitor.start()``, tried again while JetStream does not answer, for up to
    ``JETSTREAM_WAIT_S``; a request JetStream refuses (bad settings) fails at once."""
    deadline = asyncio.get_running_loop().time() + JETSTREAM_WAIT_S
    while True:
        try:
            await monitor.start()
            return
        except nats.js.errors.BadRequestError as exc:
            raise ServiceError(
                f"JetStream refused the monitor's streams: {exc.description or exc}",
                service="nats",
                hint="check services.nats.replicas against the cluster's nodes and risk.limits",
            ) from None
        except nats.errors.Error as exc:
            error = f"{type(exc).__name__}: {exc}"
            if stop.is_set() or asyncio.get_running_loop().time() >= deadline:
                raise ServiceError(
                    f"JetStream did not answer within {JETSTREAM_WAIT_S:.0f}s ({error})",
                    service="nats",
                    hint="check that a majority of the cluster's nodes run (`semspec status`)",
                ) from None
            log().warning("JetStream does not answer yet; trying again", error=error)
            await asyncio.sleep(_RETRY_EVERY_S)
