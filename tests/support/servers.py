"""Real NATS and Oxigraph servers for tests, started on a free loopback port and stopped by PID."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from semspec.core.config.models import GraphConfig
from semspec.services.ports import free_port, tcp_answers
from semspec.services.specs import binary

SLEEP_ARGV = [sys.executable, "-c", "import time; time.sleep(60)"]
"""A process that does nothing for a minute: something a test can start, find and stop."""


def squat(port: int, within_s: float = 15.0) -> socket.socket:
    """A socket bound to loopback ``port`` once a killed server's last thread has let it go,
    so a restarted server has to come back elsewhere; OSError when it is still taken after
    ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while True:
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            squatter.bind(("127.0.0.1", port))
            return squatter
        except OSError:
            squatter.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _start(argv: list[str], port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log_path`` and wait until ``port`` accepts clients."""
    with log_path.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while not tcp_answers("127.0.0.1", port, timeout=0.2):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"{Path(argv[0]).name} did not start; see {log_path}")
        time.sleep(0.02)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate ``proc`` (a process a test started, and only it), killing it if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@dataclass
class NatsServer:
    """A ``nats-server -js`` process owned by a test."""

    store: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        """Start (or restart on the same port and store) and wait until it accepts clients."""
        if not self.port:
            self.port = free_port()
        self.store.mkdir(parents=True, exist_ok=True)
        argv = [binary("nats-server"), "-js", "-sd", str(self.store)]
        argv += ["-a", "127.0.0.1", "-p", str(self.port)]
        self.proc = _start(argv, self.port, self.store / "server.log")
        return self

    def stop(self) -> None:
        """Terminate the process this object started, and only it."""
        if self.proc is not None:
            _stop(self.proc)
        self.proc = None


class OxigraphServer:
    """An ``oxigraph serve`` process over ``location``, owned by a test and stopped by its PID."""

    def __init__(self, location: Path) -> None:
        self.port = free_port()
        argv = [binary("oxigraph"), "serve", "--location", str(location)]
        argv += ["--bind", f"127.0.0.1:{self.port}"]
        self.proc = _start(argv, self.port, location.parent / "oxigraph.log")

    def config(self) -> GraphConfig:
        base = f"http://127.0.0.1:{self.port}"
        return GraphConfig(mode="sparql", query_url=f"{base}/query", update_url=f"{base}/update")

    def stop(self) -> None:
        _stop(self.proc)
