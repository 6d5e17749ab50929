"""A 3-node NATS cluster with JetStream on loopback, owned by a test and stopped by its PIDs.

Each node is a ``nats-server`` with its own store folder, client, route and monitoring port, and
a config file (0600) holding the cluster's user and password, as the real stack keeps them out of
the command line. ``kill(i)`` takes a node down hard (SIGKILL), ``restart(i)`` brings it back on
the same ports and store so it rejoins the cluster.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semspec.core.run_folder import make_private_dir, write_private
from semspec.services.ports import free_port
from semspec.services.specs import binary
from tests.support.servers import _start as start_process
from tests.support.servers import _stop as stop_process

FORM_TIMEOUT_S = 30.0
"""How long the cluster may take to elect a JetStream meta leader with every node current."""


@dataclass
class ClusterNode:
    """One node: its ports, store and (while running) process."""

    name: str
    folder: Path
    client_port: int
    route_port: int
    monitor_port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def jsz(self) -> dict[str, Any] | None:
        """The node's ``/jsz`` report, or None while it does not answer."""
        url = f"http://127.0.0.1:{self.monitor_port}/jsz"
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                found: dict[str, Any] = json.loads(resp.read())
                return found
        except (OSError, ValueError):
            return None


@dataclass
class NatsCluster:
    """Three ``nats-server -js`` processes routed to each other, with one user and password."""

    root: Path
    size: int = 3
    name: str = field(default_factory=lambda: f"semspec-test-{secrets.token_hex(4)}")
    user: str = "semspec"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    nodes: list[ClusterNode] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        """Every node's client URL, in node order."""
        return [node.url for node in self.nodes]

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect``: the servers and the credentials."""
        return {"servers": self.urls, "user": self.user, "password": self.password}

    def start(self) -> NatsCluster:
        """Start every node and wait until the cluster has formed."""
        taken: set[int] = set()
        for i in range(self.size):
            ports = []
            for _ in range(3):
                port = free_port(avoid=taken)
                taken.add(port)
                ports.append(port)
            folder = self.root / f"n{i}"
            make_private_dir(folder)
            client, route, monitor = ports
            self.nodes.append(ClusterNode(f"n{i}", folder, client, route, monitor))
        for node in self.nodes:
            self._write_config(node)
        for i in range(self.size):
            self._spawn(i)
        self.wait_formed()
        return self

    def _write_config(self, node: ClusterNode) -> None:
        routes = [f"nats://127.0.0.1:{o.route_port}" for o in self.nodes if o is not node]
        # JSON strings and lists are valid values of the NATS config format.
        body = "\n".join(
            [
                f"server_name: {json.dumps(node.name)}",
                f"listen: {json.dumps(f'127.0.0.1:{node.client_port}')}",
                f"http: {json.dumps(f'127.0.0.1:{node.monitor_port}')}",
                f"jetstream {{ store_dir: {json.dumps(str(node.folder / 'store'))} }}",
                "authorization {",
                f"  user: {json.dumps(self.user)}",
                f"  password: {json.dumps(self.password)}",
                "}",
                "cluster {",
                f"  name: {json.dumps(self.name)}",
                f"  listen: {json.dumps(f'127.0.0.1:{node.route_port}')}",
                f"  routes: {json.dumps(routes)}",
                "}",
                "",
            ]
        )
        write_private(node.folder / "nats-server.conf", body)

    def _spawn(self, i: int) -> None:
        node = self.nodes[i]
        argv = [binary("nats-server"), "-c", str(node.folder / "nats-server.conf")]
        try:
            node.proc = start_process(argv, node.client_port, node.folder / "server.log")
        except RuntimeError:
            self.stop()
            raise

    def formed(self) -> bool:
        """True when every running node sees the same JetStream meta leader and all peers of
        the meta group are current."""
        leaders = set()
        for node in self.nodes:
            if not node.running:
                continue
            report = node.jsz()
            meta = (report or {}).get("meta_cluster") or {}
            leader = meta.get("leader")
            if not leader:
                return False
            leaders.add(leader)
            if node.name == leader:
                peers = meta.get("replicas") or []
                alive = {n.name for n in self.nodes if n.running} - {leader}
                current = {p["name"] for p in peers if p.get("current") and not p.get("offline")}
                if not alive <= current:
                    return False
        return len(leaders) == 1

    def wait_formed(self, timeout_s: float = FORM_TIMEOUT_S) -> None:
        """Wait (bounded) until ``formed()``; a ``RuntimeError`` naming the logs otherwise."""
        deadline = time.monotonic() + timeout_s
        while not self.formed():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the NATS cluster did not form; see server.log in {self.root}")
            time.sleep(0.1)

    def leader(self) -> str | None:
        """The name of the current JetStream meta leader, as a running node reports it."""
        for node in self.nodes:
            report = node.jsz() if node.running else None
            leader = ((report or {}).get("meta_cluster") or {}).get("leader")
            if leader:
                return str(leader)
        return None

    def kill(self, i: int) -> None:
        """SIGKILL node ``i`` (the process this cluster started) and reap it."""
        proc = self.nodes[i].proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        self.nodes[i].proc = None

    def restart(self, i: int, *, wait: bool = True) -> None:
        """Start node ``i`` again on its ports and store; with ``wait``, until it has rejoined."""
        self.kill(i)
        self._spawn(i)
        if wait:
            self.wait_formed()

    def stop(self) -> None:
        """Terminate every node this cluster started (and only them), killing any that linger."""
        for node in self.nodes:
            if node.proc is not None:
                stop_process(node.proc)
            node.proc = None
