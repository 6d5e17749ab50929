"""Which graph a process opens, and who serves as a worker: no full stack needed.

The graph service runs alone here (the real graph server started by the supervisor, as
``semspec up`` does); workers and monitors are real processes that announce themselves.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from semspec.core.config.models import GraphConfig, SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import ServiceRecord, save_records
from semspec.graph.access import graph_config, open_graph
from semspec.graph.store import embedded_store
from semspec.services.agents import WorkerSpec
from semspec.services.graph_server import GraphSpec
from semspec.services.presence import present, ready_file
from semspec.services.supervisor import Supervisor
from tests.support.servers import SLEEP_ARGV

S, P = URIRef("urn:test:s"), URIRef("urn:test:p")
ANNOUNCE = """
import sys, time
from pathlib import Path
from semspec.services.presence import announce
announce(Path(sys.argv[1]), "worker", sys.argv[2], "semspec")
print("ready", flush=True)
time.sleep(60)
"""


def graph_record(repo: Path, pid: int, location: Path) -> None:
    """What ``up`` records for a graph server (PID ``pid`` running ``SLEEP_ARGV``)."""
    base = "http://127.0.0.1:9"
    extra = {
        "query_url": f"{base}/query",
        "update_url": f"{base}/update",
        "location": str(location),
    }
    record = ServiceRecord("graph", pid, SLEEP_ARGV, base, {"http": 9}, extra)
    save_records(repo / ".semspec" / "run", {"graph": record})


def test_without_a_graph_server_a_process_opens_the_files(tmp_path: Path) -> None:
    assert graph_config(SemspecConfig(), tmp_path) == GraphConfig()


def test_while_the_recorded_graph_server_runs_every_process_uses_its_endpoint(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    graph_record(tmp_path, sleeper.pid, tmp_path / ".semspec" / "graph")
    used = graph_config(SemspecConfig(), tmp_path)
    assert (used.mode, used.query_url, used.update_url) == (
        "sparql",
        "http://127.0.0.1:9/query",
        "http://127.0.0.1:9/update",
    )


def test_a_graph_server_that_is_gone_or_serves_another_directory_is_not_used(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    graph_record(tmp_path, sleeper.pid, tmp_path / "elsewhere")
    assert graph_config(SemspecConfig(), tmp_path).mode == "embedded"
    graph_record(tmp_path, 999_999, tmp_path / ".semspec" / "graph")
    assert graph_config(SemspecConfig(), tmp_path).mode == "embedded"


def test_a_configured_endpoint_wins_over_a_running_graph_server(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    graph_record(tmp_path, sleeper.pid, tmp_path / ".semspec" / "graph")
    external = GraphConfig(mode="sparql", query_url="http://g/q", update_url="http://g/u")
    assert graph_config(SemspecConfig(graph=external), tmp_path) == external


def test_the_graph_server_serves_the_graph_directory_on_loopback_with_a_token_file(
    tmp_path: Path,
) -> None:
    plan = GraphSpec().plan(SemspecConfig(), tmp_path, tmp_path / "run", set())
    location = tmp_path / ".semspec" / "graph"
    token_file = tmp_path / "run" / "graph.token"
    port = plan.ports["http"]
    assert plan.argv == [
        sys.executable,
        "-m",
        "semspec.graph.http_server",
        "--location",
        str(location),
        "--port",
        str(port),
        "--token-file",
        str(token_file),
    ]
    assert plan.extra == {
        "query_url": f"http://127.0.0.1:{port}/query",
        "update_url": f"http://127.0.0.1:{port}/update",
        "location": str(location),
        "token_file": str(token_file),
    }
    # The token itself is on no command line (any local user reads those), only in the file.
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.read_text().strip() not in " ".join(plan.argv)


def test_the_graph_service_takes_the_files_over_and_gives_them_back_at_down(
    tmp_path: Path,
) -> None:
    config = SemspecConfig()
    supervisor = Supervisor(config, tmp_path, specs=[GraphSpec()])
    try:
        [started] = supervisor.up()
        assert (started.name, started.state) == ("graph", "started")
        assert started.version.startswith("semspec graph server (pyoxigraph")
        served = open_graph(config, tmp_path)
        try:
            served.replace_graph("urn:test:g", [(S, P, Literal("through the server"))])
        finally:
            served.close()
        with pytest.raises(ServiceError, match="graph store"):
            embedded_store(tmp_path / ".semspec" / "graph")
        assert [(s.name, s.state) for s in supervisor.status()] == [("graph", "up")]
    finally:
        assert [s.state for s in supervisor.down()] == ["stopped"]
    files = open_graph(config, tmp_path)
    try:
        rows = files.select("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }")
    finally:
        files.close()
    assert [str(row["o"]) for row in rows] == ["through the server"]


def test_up_says_which_directory_is_held_when_the_graph_server_cannot_take_it(
    tmp_path: Path,
) -> None:
    held = embedded_store(tmp_path / ".semspec" / "graph")
    supervisor = Supervisor(SemspecConfig(), tmp_path, specs=[GraphSpec()])
    try:
        with pytest.raises(ServiceError) as failed:
            supervisor.up()
    finally:
        supervisor.down()
        held.close()
    assert "graph" in failed.value.message and "exited during start-up" in failed.value.message
    assert "LOCK" in failed.value.message
    hint = failed.value.hint or ""
    assert str(tmp_path / ".semspec" / "graph") in hint and "another process" in hint


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Two processes that announce themselves as workers of ``tmp_path/run``."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ANNOUNCE, str(tmp_path / "run"), f"worker-{n}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()


def test_a_second_worker_announces_itself_beside_the_first(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    found = present(tmp_path / "run", "worker")
    assert [(p.identity, p.pid, p.host) for p in found] == sorted(
        [(f"worker-{n}", proc.pid, socket.gethostname()) for n, proc in enumerate(workers)],
        key=lambda item: item[1],
    )


def test_a_killed_worker_is_no_longer_listed_and_its_ready_file_goes(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    workers[0].kill()
    workers[0].wait(timeout=10)
    assert [p.pid for p in present(tmp_path / "run", "worker")] == [workers[1].pid]
    assert not ready_file(tmp_path / "run", "worker", workers[0].pid).exists()


def test_status_lists_workers_started_outside_up_with_their_identities(
    tmp_path: Path, workers: list[subprocess.Popen[str]]
) -> None:
    config = SemspecConfig(services={"run_dir": str(tmp_path / "run")})
    rows = Supervisor(config, tmp_path, specs=[WorkerSpec()]).status()
    assert [(s.name, s.state, s.identity, s.pid) for s in rows] == [
        ("worker", "down", "", None),
        *sorted(
            [("worker", "up", f"worker-{n}", proc.pid) for n, proc in enumerate(workers)],
            key=lambda row: row[3],
        ),
    ]
    assert all(s.extra == {"started": "separately"} for s in rows[1:])
