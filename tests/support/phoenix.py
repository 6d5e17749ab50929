"""Arize Phoenix, a real tracing backend, on loopback for the telemetry tests.

Phoenix is installed from PyPI (``arize-phoenix``) into a virtual environment of its own: its
dependencies pin versions this project's cannot share (it would downgrade ``anthropic``), so it
is not in the ``dev`` extra. ``.ci/run`` makes that environment at ``.phoenix/``; elsewhere point
``SEMSPEC_PHOENIX`` at a ``phoenix`` executable, or the tests that need it are skipped (never
in CI, where a missing Phoenix is a failure).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_S = 180.0
"""Phoenix takes about 30 s to start on a busy two-core machine (its database migrations)."""


def phoenix_executable() -> Path:
    """Where Phoenix is; skips the test when it is not installed outside CI."""
    given = os.environ.get("SEMSPEC_PHOENIX")
    found = Path(given) if given else ROOT / ".phoenix" / "bin" / "phoenix"
    if not found.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"Phoenix is not installed at {found} (.ci/run installs it)")
        pytest.skip(
            f"no Phoenix at {found}: python -m venv .phoenix && "
            ".phoenix/bin/pip install 'arize-phoenix>=20.26,<21'"
        )
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Phoenix:
    """A running Phoenix: its OTLP base endpoint and its GraphQL API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def graphql(self, query: str) -> Any:
        """The ``data`` of a GraphQL query."""
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": query}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = json.load(answer)
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def spans(self) -> list[dict[str, Any]]:
        """Every span of the default project, with its trace's latency and cost."""
        data = self.graphql(
            """{ projects { edges { node { name spans(first: 1000) { edges { node {
                name spanId parentId statusCode latencyMs
                attributes
                trace { traceId latencyMs costSummary { total { cost } } }
            } } } } } } }"""
        )
        found = []
        for project in data["projects"]["edges"]:
            for edge in project["node"]["spans"]["edges"]:
                span = edge["node"]
                span["attributes"] = json.loads(span["attributes"] or "{}")
                found.append(span)
        return found


@contextmanager
def running_phoenix(workdir: Path) -> Iterator[Phoenix]:
    """Phoenix on free loopback ports, its data under ``workdir``; stopped after the block."""
    executable = phoenix_executable()
    port, grpc_port = _free_port(), _free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(workdir),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        # Phoenix reports its own usage to its makers unless told not to: loopback only here.
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(executable), "serve"], env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / "phoenix.log").read_text(errors="replace")[-2000:]
                raise AssertionError(f"Phoenix did not start:\n{tail}")
            time.sleep(0.5)
        yield Phoenix(url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
