"""The stack heals: ``semspec up`` after a service died brings it back where it was, or restarts
what uses it when it had to move (a process started by hand follows the move itself); ``down``
stops everything from the run folder alone, even with a config it cannot read.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from semspec.core.run_folder import cmdline_of, load_records
from semspec.services.presence import present
from tests.support.monitor_probe import signals_for, wait_until_monitor_idle
from tests.support.servers import squat
from tests.support.stack import Stack, check_gate, cli_env, running_stack, sample_config

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("heals"), sample_config([check_gate()])) as running:
        yield running


@pytest.fixture
def hand_started_monitor(stack: Stack) -> Iterator[subprocess.Popen[bytes]]:
    """A second monitor started by hand (``semspec monitor``), which ``up`` never restarts."""
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "monitor"]
    proc = subprocess.Popen(argv, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while proc.pid not in [p.pid for p in present(stack.run_dir, "monitor")]:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the monitor started by hand never served"
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def _up(stack: Stack) -> dict[str, dict[str, Any]]:
    statuses = stack.cli_json("up")
    return {s["name"]: s for s in statuses}


def test_up_brings_a_dead_nats_back_on_its_recorded_address(stack: Stack) -> None:
    before = stack.records()
    stack.kill("nats")
    services = _up(stack)
    assert services["nats"]["state"] == "started"
    assert services["nats"]["address"] == before["nats"].address
    # Nothing moved, so nothing that uses NATS had to restart.
    assert services["worker"]["state"] == "already running"
    assert stack.records()["worker"].pid == before["worker"].pid


def test_up_restarts_what_uses_nats_when_nats_had_to_move(
    stack: Stack, hand_started_monitor: subprocess.Popen[bytes]
) -> None:
    old = stack.records()
    stack.kill("nats")
    # Someone else takes the port meanwhile: NATS has to come back elsewhere.
    with squat(old["nats"].ports["client"]) as squatter:
        squatter.listen()
        services = _up(stack)
        new_url = stack.records()["nats"].address
        assert new_url != old["nats"].address
        for name in ("worker", "monitor"):
            assert services[name]["state"] == "started", services[name]
            assert cmdline_of(old[name].pid) is None, f"the old {name} still runs"
        # The monitor started by hand is not `up`'s to restart: it follows the move itself, as
        # it re-reads the run folder's addresses every few seconds (semspec/services/follow.py).
        pids = [stack.records()[name].pid for name in ("worker", "monitor")]
        expected = {pid: new_url for pid in [*pids, hand_started_monitor.pid]}
        deadline = time.monotonic() + 60
        while (used := _nats_in_use(stack)) != expected and time.monotonic() < deadline:
            time.sleep(0.5)
        assert used == expected
        assert hand_started_monitor.poll() is None, "the hand-started monitor exited"
        status = stack.cli("status", "--json")
        assert [s for s in json.loads(status.stdout) if s["state"] == "stale"] == []

    # The worker publishes where the monitor listens: a scope creep still raises its signal.
    task_id = f"creep-{uuid.uuid4().hex[:8]}"
    writes = {"calc.py": GOOD, "README.md": "# sample\n\nnow with sub\n"}
    done = stack.submit_scripted(
        task_id, [{"developer": {"write": writes}, "reviewer": APPROVE}], "--wait", "--json"
    )
    assert done.returncode == 0, done.stderr
    wait_until_monitor_idle(stack.nats_url())
    assert [s["reason"] for s in signals_for(stack.nats_url(), task_id)] == ["scope_creep"]


def _nats_in_use(stack: Stack) -> dict[int, str]:
    """The NATS address each running monitor and worker of the stack says it uses."""
    used = {p.pid: p.endpoints["nats"] for p in present(stack.run_dir, "monitor")}
    return used | {p.pid: p.endpoints["nats"] for p in present(stack.run_dir, "worker")}


def test_down_with_a_broken_config_stops_what_the_run_folder_records(tmp_path: Path) -> None:
    # A run folder away from the default: only the note `up` left says where it is.
    config = sample_config([check_gate()], services={"run_dir": "state/run"})
    with running_stack(tmp_path, config) as broken:
        run_dir = broken.repo / "state" / "run"
        pids = {name: r.pid for name, r in load_records(run_dir).items()}
        assert set(pids) == {"nats", "temporal", "graph", "worker", "monitor", "console"}
        (broken.repo / ".semspec" / "config.yaml").write_text("services: [unclosed\n")
        down = broken.cli("down")
        assert down.returncode == 0, down.stderr
        assert f"stopping what {run_dir} records" in down.stderr
        assert {name: cmdline_of(pid) for name, pid in pids.items() if cmdline_of(pid)} == {}
        assert load_records(run_dir) == {}
