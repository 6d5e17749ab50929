"""Real NATS servers for tests, started on a free loopback port and stopped by PID."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from semspec.services.ports import free_port, tcp_answers
from semspec.services.specs import binary


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
        log = (self.store / "server.log").open("ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 20
        while not tcp_answers("127.0.0.1", self.port, timeout=0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nats-server did not start; see {self.store}/server.log")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Terminate the process this object started, and only it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
