"""The stack's HTTP ports and the ``Host`` they answer (issue 25, items 4 and 7).

Before: ``semspec up`` ran the Temporal Web UI and NATS's HTTP monitoring (``/connz``, ``/jsz``:
clients, streams, subjects) on fixed ports, answering any ``Host`` (a DNS-rebinding page) and
any local user. Now both are off unless the config asks for them, and then they are served
behind ``semspec.services.host_guard``, which refuses a foreign ``Host``; ``up``'s NATS health
check speaks NATS on the client port instead of ``/healthz``.

The walk probes every port ``services.json`` records and every port the stack's processes
(and their children) listen on, with a plain HTTP request naming another host.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from semspec.services.ports import free_port, tcp_answers
from tests.security.conftest import ForeignUser, world_readable_dir
from tests.support.stack import Stack, check_gate, running_stack, sample_config

FOREIGN_HOST = "rebound.example"
PROBE_PATHS = ("/", "/metrics", "/healthz", "/varz", "/connz", "/jsz", "/api/v1/namespaces")
KNOWN_OPEN = {("temporal", "metrics")}
"""Ports left open, with why (docs/security.md): the dev server always serves Prometheus
counters on ``--metrics-port`` (the CLI cannot turn it off) to any ``Host``."""

# nobody asks every port for NATS's monitoring pages, naming the port's own address.
NOBODY_CONNZ = r"""
import json, sys, urllib.request
found = {}
for port in sys.argv[1:]:
    for path in ("/connz?subs=true", "/jsz?accounts=true", "/varz"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as answer:
                found[f"{port}{path}"] = [answer.status, answer.read(4000).decode("latin-1")]
        except Exception as exc:
            found[f"{port}{path}"] = [0, type(exc).__name__]
print(json.dumps(found))
"""


def http_status(port: int, path: str, host: str, timeout: float = 3.0) -> int | None:
    """The status of one ``GET path`` to ``127.0.0.1:port`` naming ``host``; None when what
    answers does not speak HTTP/1 (gRPC, NATS, nothing)."""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(request)
            first = sock.recv(64)
    except OSError:
        return None
    parts = first.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        return None
    return int(parts[1])


def descendants(pids: set[int]) -> set[int]:
    """``pids`` and every process below them."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent_of[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = set(pids)
    while True:
        more = {pid for pid, parent in parent_of.items() if parent in found} - found
        if not more:
            return found
        found |= more


def listening_ports(pids: set[int]) -> set[int]:
    """The TCP ports the processes ``pids`` listen on."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def stack_ports(stack: Stack) -> dict[int, tuple[str, str]]:
    """Every port of the stack: by ``services.json`` (service, name), then any other port its
    processes listen on (service, "unrecorded")."""
    found: dict[int, tuple[str, str]] = {}
    records = stack.records()
    for service, record in records.items():
        for name, port in record.ports.items():
            found[port] = (service, name)
    for service, record in records.items():
        for port in listening_ports(descendants({record.pid})):
            found.setdefault(port, (service, "unrecorded"))
    return found


def answering_a_foreign_host(stack: Stack) -> list[tuple[str, str, int, str, int]]:
    """(service, port name, port, path, status) of every answer below 400 to a foreign Host."""
    answered = []
    for port, (service, name) in sorted(stack_ports(stack).items()):
        if http_status(port, "/", f"{FOREIGN_HOST}:{port}") is None:
            continue  # not HTTP: nothing a page can read
        for path in PROBE_PATHS:
            status = http_status(port, path, f"{FOREIGN_HOST}:{port}")
            if status is not None and status < 400:
                answered.append((service, name, port, path, status))
    return answered


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """A stack with the default config, under a folder other users may enter."""
    root = world_readable_dir("semspec-ports-")
    try:
        with running_stack(root, sample_config([check_gate()])) as running:
            yield running
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_by_default_no_monitoring_port_and_no_web_ui_listens(stack: Stack) -> None:
    records = stack.records()
    assert set(records["nats"].ports) == {"client"}
    assert listening_ports(descendants({records["nats"].pid})) == {records["nats"].ports["client"]}
    assert "ui" not in records["temporal"].ports
    assert "ui_url" not in records["temporal"].extra
    assert "Temporal Web UI" not in stack.cli("status").stdout


def test_no_http_port_of_the_stack_answers_a_foreign_host(stack: Stack) -> None:
    answered = answering_a_foreign_host(stack)
    assert {(service, name) for service, name, *_ in answered} <= KNOWN_OPEN, answered
    # The walk reached every HTTP port: the console, the graph (its token missing) and
    # Temporal's HTTP API refuse.
    ports = {name: port for port, name in stack_ports(stack).items()}
    for refusing in (("console", "http"), ("graph", "http"), ("temporal", "http")):
        port = ports[refusing]
        assert (http_status(port, "/", f"{FOREIGN_HOST}:{port}") or 0) >= 400, refusing


def test_another_user_reads_nothing_of_connz_on_any_port(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    ports = sorted(stack_ports(stack))
    done = foreign_user.python(NOBODY_CONNZ, *map(str, ports), timeout=120)
    assert done.returncode == 0, done.stderr
    pages = json.loads(done.stdout)
    read = {where: body[:200] for where, (status, body) in pages.items() if status == 200}
    assert [w for w, body in read.items() if "server_id" in body or "connections" in body] == []


def test_the_web_ui_and_monitoring_asked_for_refuse_a_foreign_host(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    services = {
        "temporal": {"port": 0, "ui": True, "ui_port": 0},
        "nats": {"port": 0, "monitor_port": 0},
    }
    config = sample_config([check_gate()], services=services)
    with running_stack(tmp_path_factory.mktemp("ports-on"), config) as stack:
        records = stack.records()
        ui = records["temporal"].ports["ui"]
        monitor = records["nats"].ports["monitor"]
        assert records["temporal"].extra["ui_url"] == f"http://127.0.0.1:{ui}"
        for port, path in ((ui, "/"), (monitor, "/connz")):
            assert http_status(port, path, f"{FOREIGN_HOST}:{port}") == 403, port
            assert http_status(port, path, f"localhost.{FOREIGN_HOST}:{port}") == 403, port
            assert http_status(port, path, f"127.0.0.1:{port}", timeout=10) == 200, port
            assert http_status(port, path, f"localhost:{port}", timeout=10) == 200, port


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"behind the guard"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def guarded_server() -> Iterator[int]:
    """An HTTP server of ours behind ``host_guard``; the guard's port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    listen = free_port(0)
    # The guard's child just sleeps: the guard serves as long as it runs.
    child = [sys.executable, "-c", "import time; time.sleep(120)"]
    argv = [sys.executable, "-m", "semspec.services.host_guard"]
    argv += [f"--route={listen}:{server.server_address[1]}", "--", *child]
    with subprocess.Popen(argv) as guard:
        try:
            for _ in range(200):
                assert guard.poll() is None, "the guard exited"
                if tcp_answers("127.0.0.1", listen, timeout=0.1):
                    break
                time.sleep(0.05)
            yield listen
        finally:
            guard.terminate()  # the guard this test started; it stops its child
            guard.wait(timeout=20)
            server.shutdown()
            server.server_close()


def raw_status(port: int, head: bytes) -> int | None:
    """The status answering ``head`` sent as it is; None when the connection closed silent."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(head)
            first = sock.recv(64)
    except OSError:
        return None
    parts = first.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def test_the_host_guard_passes_only_requests_naming_its_own_address() -> None:
    with guarded_server() as port:
        own = f"127.0.0.1:{port}".encode()
        assert raw_status(port, b"GET / HTTP/1.1\r\nHost: " + own + b"\r\n\r\n") == 200
        local = f"localhost:{port}".encode()
        assert raw_status(port, b"GET / HTTP/1.1\r\nhost: " + local + b"\r\n\r\n") == 200
        refused = [
            b"GET / HTTP/1.1\r\n\r\n",  # no Host
            b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: " + own + b"\r\nHost: evil.example\r\n\r\n",  # two
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
        ]
        for head in refused:
            assert raw_status(port, head) == 403, head
        # A head that never ends within the limit is closed without reaching the server.
        assert raw_status(port, b"GET / HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n") is None
