"""``semspec up``/``status``/``down`` on real NATS, Temporal, worker and monitor processes.

Every repository here asks for free ports (``port: 0``) so stacks of parallel test runs never
collide, and every test that starts services stops them with ``semspec down`` in ``finally``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml
from temporalio.client import Client
from typer.testing import CliRunner, Result

from semspec.cli.app import app
from semspec.core.config import load_config
from semspec.core.run_folder import ServiceRecord, load_records, save_records
from semspec.services.specs import NatsSpec, TemporalSpec
from semspec.services.supervisor import Supervisor
from tests.support.repos import make_repo
from tests.support.servers import NatsServer

ANY_PORTS = {"nats": {"port": 0}, "temporal": {"port": 0, "ui": True, "ui_port": 0}}
ALL_SERVICES = ["nats", "temporal", "graph", "worker", "monitor", "console"]


def clean_env() -> dict[str, str]:
    """Our environment without SEMSPEC_* overrides, logs as JSON, a wide terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    return {**env, "SEMSPEC_LOG_FORMAT": "json", "COLUMNS": "200"}


def sample_repo(path: Path, services: dict[str, Any] | None = None) -> Path:
    config = {"project": {"name": "sample"}, "services": services or ANY_PORTS}
    make_repo(path, {"README.md": "# sample\n"})
    target = path / ".semspec" / "config.yaml"
    target.parent.mkdir(parents=True)
    target.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def semspec(repo: Path, *args: str) -> Result:
    """The real CLI, in process."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    env = {**unset, "SEMSPEC_LOG_FORMAT": "json", "COLUMNS": "200"}
    return CliRunner().invoke(app, ["--repo", str(repo), *args], env=env)


def semspec_json(repo: Path, *args: str, code: int = 0) -> Any:
    result = semspec(repo, *args, "--json")
    assert result.exit_code == code, f"{args}: {result.stderr or result.exception!r}"
    return json.loads(result.stdout)


def down(repo: Path) -> None:
    """``semspec down``, for ``finally`` blocks."""
    result = semspec(repo, "down")
    assert result.exit_code == 0, result.stderr


@dataclass
class Stack:
    repo: Path
    up: list[dict[str, Any]]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The whole stack, started once for this module by ``python -m semspec up``."""
    repo = sample_repo(tmp_path_factory.mktemp("stack") / "repo")
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo)]
    try:
        done = subprocess.run(
            [*argv, "up", "--json"], capture_output=True, text=True, env=clean_env(), timeout=120
        )
        assert done.returncode == 0, done.stderr
        yield Stack(repo, json.loads(done.stdout))
    finally:
        subprocess.run([*argv, "down"], capture_output=True, env=clean_env(), timeout=90)


def test_up_starts_nats_temporal_the_worker_and_the_monitor(stack: Stack) -> None:
    assert [(s["name"], s["state"]) for s in stack.up] == [(n, "started") for n in ALL_SERVICES]
    statuses = semspec_json(stack.repo, "status")
    assert [(s["name"], s["state"]) for s in statuses] == [(n, "up") for n in ALL_SERVICES]
    by_name = {s["name"]: s for s in statuses}
    assert by_name["nats"]["version"].startswith("nats-server")
    assert by_name["temporal"]["extra"]["ui_url"].startswith("http://127.0.0.1:")
    assert by_name["worker"]["address"] == "task queue semspec"


def test_up_a_second_time_leaves_the_running_services_alone(stack: Stack) -> None:
    before = load_records(stack.repo / ".semspec" / "run")
    again = semspec_json(stack.repo, "up")
    assert [(s["name"], s["state"]) for s in again] == [
        (n, "already running") for n in ALL_SERVICES
    ]
    assert {s["name"]: s["pid"] for s in again} == {n: r.pid for n, r in before.items()}
    assert load_records(stack.repo / ".semspec" / "run") == before


def test_status_table_shows_each_service_and_the_web_ui(stack: Stack) -> None:
    result = semspec(stack.repo, "status")
    assert result.exit_code == 0, result.stderr
    temporal = load_records(stack.repo / ".semspec" / "run")["temporal"]
    for text in ("nats", "worker", "monitor", "task queue semspec", temporal.address):
        assert text in result.stdout
    assert f"Temporal Web UI: {temporal.extra['ui_url']}" in result.stdout


def test_the_worker_started_by_up_logs_json_lines(stack: Stack) -> None:
    log = stack.repo / ".semspec" / "run" / "logs" / "worker.log"
    events = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    ready = [e for e in events if e.get("event") == "worker ready"]
    assert ready and ready[0]["task_queue"] == "semspec" and ready[0]["component"] == "worker"


def test_what_up_writes_under_the_run_directory_stays_out_of_git_status(stack: Stack) -> None:
    statuses = pygit2.Repository(str(stack.repo)).status()
    assert (stack.repo / ".semspec" / "run" / "services.json").exists()
    assert not [path for path in statuses if path.startswith(".semspec/run")]


def test_status_with_nothing_started_reports_every_service_down_and_exits_1(
    tmp_path: Path,
) -> None:
    repo = sample_repo(tmp_path / "repo")
    statuses = semspec_json(repo, "status", code=1)
    assert [(s["name"], s["state"]) for s in statuses] == [(n, "down") for n in ALL_SERVICES]


def test_down_with_nothing_started_says_so(tmp_path: Path) -> None:
    result = semspec(sample_repo(tmp_path / "repo"), "down")
    assert (result.exit_code, result.stdout.strip()) == (0, "nothing was running")


def test_status_probes_external_endpoints_instead_of_pids(tmp_path: Path) -> None:
    nats = NatsServer(tmp_path / "nats").start()
    try:
        services = {"nats": {"url": nats.url}, "temporal": {"address": "127.0.0.1:9"}}
        repo = sample_repo(tmp_path / "repo", services)
        statuses = semspec_json(repo, "status", code=1)
    finally:
        nats.stop()
    assert [(s["name"], s["state"], s["address"]) for s in statuses[:2]] == [
        ("nats", "up", nats.url),
        ("temporal", "unreachable", "127.0.0.1:9"),
    ]


def test_down_never_kills_a_process_it_did_not_start(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "repo")
    run_dir = repo / ".semspec" / "run"
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        Supervisor(load_config(repo, environ={}), repo, specs=[NatsSpec()]).up()
        ours = load_records(run_dir)["nats"]
        # As if the PID had been reused by another program since `up` recorded it.
        save_records(run_dir, {"nats": ServiceRecord(**{**ours.__dict__, "pid": stranger.pid})})
        stopped = semspec_json(repo, "down")
        assert [(s["name"], s["state"], s["pid"]) for s in stopped] == [
            ("nats", "not ours", stranger.pid)
        ]
        assert stranger.poll() is None
        # Our real NATS is still up: put its record back so the cleanup below stops it.
        save_records(run_dir, {"nats": ours})
        assert [s["state"] for s in semspec_json(repo, "down")] == ["stopped"]
    finally:
        down(repo)
        stranger.kill()
        stranger.wait(timeout=10)


async def start_parked_workflow(address: str, workflow_id: str) -> None:
    """Start a workflow on a queue no worker polls, so it stays open in the history."""
    client = await Client.connect(address)
    await client.start_workflow("NoWorkerPolls", id=workflow_id, task_queue=f"none-{workflow_id}")


async def listed_ids(address: str, workflow_id: str) -> list[str]:
    """Ids the visibility store lists for ``workflow_id`` (it catches up shortly after a start)."""
    client = await Client.connect(address)
    query = f"WorkflowId = '{workflow_id}'"
    for _ in range(100):
        found = [wf.id async for wf in client.list_workflows(query)]
        if found:
            return found
        await asyncio.sleep(0.1)
    return []


def test_a_workflow_started_before_down_is_listed_after_up(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "repo")
    run_dir = repo / ".semspec" / "run"
    workflow_id = f"persist-{uuid.uuid4()}"
    supervisor = Supervisor(load_config(repo, environ={}), repo, specs=[TemporalSpec()])
    try:
        supervisor.up()
        first = load_records(run_dir)["temporal"]
        asyncio.run(start_parked_workflow(first.address, workflow_id))
        assert asyncio.run(listed_ids(first.address, workflow_id)) == [workflow_id]
        assert [s["state"] for s in semspec_json(repo, "down")] == ["stopped"]
        supervisor.up()
        second = load_records(run_dir)["temporal"]
        assert second.pid != first.pid
        assert asyncio.run(listed_ids(second.address, workflow_id)) == [workflow_id]
    finally:
        down(repo)
