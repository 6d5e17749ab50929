"""A worker started by hand follows NATS when ``semspec up`` has to start it elsewhere (issue
26: such a worker kept the old address and took activities whose publishes failed).

Real stack, real processes: ``semspec worker`` started by hand, NATS killed by PID and its port
taken, ``up`` starts NATS on another port; the hand-started worker re-reads the run folder,
serves again at the new address and announces it, so ``status`` lists no stale worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from semspec.services.presence import Presence, present
from tests.support.polling import wait_until
from tests.support.servers import squat
from tests.support.stack import Stack, check_gate, cli_env, running_stack, sample_config

IDENTITY = "by-hand"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(tmp_path, sample_config([check_gate()])) as running:
        yield running


@pytest.fixture
def hand_worker(stack: Stack, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``semspec worker`` started by hand (``up`` never restarts it), and its log."""
    log = tmp_path / "hand-worker.log"
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "worker"]
    env = {**cli_env(), "SEMSPEC_LOG_LEVEL": "INFO"}
    with log.open("wb") as out:
        proc = subprocess.Popen([*argv, "--identity", IDENTITY], env=env, stdout=out, stderr=out)
    try:
        wait_until(lambda: announced(stack) is not None, "the hand-started worker never served", 60)
        yield proc, log
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def announced(stack: Stack) -> Presence | None:
    found = [p for p in present(stack.run_dir, "worker") if p.identity == IDENTITY]
    return found[0] if found else None


def test_a_hand_started_worker_follows_nats_that_up_moved(
    stack: Stack, hand_worker: tuple[subprocess.Popen[bytes], Path]
) -> None:
    proc, log = hand_worker
    old = stack.nats_address()
    stack.kill("nats")
    with squat(stack.records()["nats"].ports["client"]) as squatter:
        squatter.listen()
        up = stack.cli("up", "--json", timeout=120)
        assert up.returncode == 0, up.stderr
        new = stack.nats_address()
        assert new != old

        def follows() -> bool:
            presence = announced(stack)
            return presence is not None and presence.endpoints.get("nats") == new

        wait_until(follows, f"the hand-started worker stayed on {old}", 60)
        assert proc.poll() is None, "the worker exited instead of following"
        assert "the stack's services moved: following them" in log.read_text(encoding="utf-8")
        status = stack.cli("status", "--json")
        states = {(s["name"], s.get("pid")): s["state"] for s in json.loads(status.stdout)}
        assert "stale" not in states.values(), states
