"""A gate dies with the worker that started it, and two runs of one worktree's gates never
overlap (issue 26: after a kill -9 of a worker its gates ran to their end, and in 3 of 5 cases
overlapped the retried gate in the same worktree).

The gate appends ``<run> <time>`` to a marker file in its worktree every 0.1 s; its first run
goes on for ``FIRST_RUN_S``, longer than the kill, the heartbeat timeout and the retry together,
so without the parent-death watch the retried run would start while the first still writes.
Real stacks (``semspec up``), fenced by bubblewrap and unfenced; real worker processes killed by
PID. The lock (``run_lock.py``) is also tested on its own: a second run of a worktree's gate
ends the first before it starts.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from semspec.core.errors import ConfigError
from semspec.core.sandbox import UNFENCED, choose_sandbox
from semspec.workflow.gates import GateFencing, GateSpec, run_gate
from tests.support.polling import wait_until
from tests.support.stack import Stack, python_gate, running_stack, sample_config

FIRST_RUN_S = 60
MARKER = "gate-marker.txt"
SUB_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
MARK_CODE = (
    "import os, time, uuid; run = uuid.uuid4().hex[:8]; "
    f"n = 10 if os.path.exists('{MARKER}') else {FIRST_RUN_S * 10}; "
    "f = open('{m}', 'a'); "
    "[(f.write(run + ' ' + repr(time.time()) + chr(10)), f.flush(), time.sleep(0.1)) "
    "for _ in range(n)]"
).replace("{m}", MARKER)


def runs(marker: Path) -> dict[str, list[float]]:
    """Each run's marks, by run id."""
    found: dict[str, list[float]] = {}
    for line in marker.read_text(encoding="utf-8").splitlines():
        run, _, at = line.partition(" ")
        if at:
            found.setdefault(run, []).append(float(at))
    return found


def marker_of(stack: Stack) -> Path | None:
    found = list((stack.run_dir / "worktrees").glob(f"*/{MARKER}"))
    return found[0] if found else None


@pytest.mark.parametrize("mode", ["none", "bwrap", "bwrap-network"])
def test_a_killed_workers_gate_dies_with_it_and_its_retry_runs_alone(
    tmp_path: Path, mode: str
) -> None:
    if mode != "none":
        try:
            choose_sandbox("bwrap")
        except ConfigError as exc:
            if os.environ.get("CI"):
                pytest.fail(f"the sandbox tests must run under CI: {exc.message}")
            pytest.skip(exc.message)
    gate = python_gate("mark", MARK_CODE, timeout=FIRST_RUN_S + 30)
    # With network, the launcher stays as bubblewrap's parent to run slirp4netns; without, it
    # did exec bubblewrap, whose --die-with-parent alone ended the fenced run with the worker.
    gate["network"] = mode == "bwrap-network"
    config = sample_config([gate])
    config["gates"]["sandbox"] = mode.removesuffix("-network")
    with running_stack(tmp_path, config) as stack:
        done = stack.submit_scripted(
            "t1",
            [
                {
                    "developer": {"write": {"calc.py": SUB_CALC}},
                    "reviewer": {"verdict": "approve", "summary": "fine"},
                }
            ],
        )
        assert done.returncode == 0, done.stderr
        wait_until(lambda: marker_of(stack) is not None, "the gate never started", 90)
        marker = marker_of(stack)
        assert marker is not None
        wait_until(lambda: marker.stat().st_size > 100, "the gate never wrote", 30)

        stack.kill("worker")
        time.sleep(1.0)
        size = marker.stat().st_size
        time.sleep(2.0)
        assert marker.stat().st_size == size, "the killed worker's gate goes on writing"
        (first,) = runs(marker)

        # A worker again: Temporal retries the gate once its heartbeat times out.
        assert stack.cli("up", "--json", timeout=120).returncode == 0
        wait_until(lambda: len(runs(marker)) == 2, "the gate was never retried", 120)
        marks = runs(marker)
        (second,) = set(marks) - {first}
        assert max(marks[first]) < min(marks[second]), "the retried gate overlapped the first"
        stack.wait_status("t1", lambda s: bool(s["outcome"]), timeout_s=120)


async def test_a_second_run_of_a_worktrees_gate_ends_the_first(tmp_path: Path) -> None:
    worktree = tmp_path / "worktrees" / "t1"
    worktree.mkdir(parents=True)
    spec = GateSpec("mark", f'{sys.executable} -c "{MARK_CODE}"', True, FIRST_RUN_S + 30, ".")
    fencing = GateFencing(UNFENCED)
    logs = tmp_path / "logs"
    first = asyncio.create_task(run_gate(spec, worktree, logs / "1", 4096, fencing=fencing))
    marker = worktree / MARKER
    while not marker.exists() or marker.stat().st_size < 50:
        await asyncio.sleep(0.1)
    second = await run_gate(spec, worktree, logs / "2", 4096, fencing=fencing)
    ended = await asyncio.wait_for(first, 10)

    assert second.passed
    assert not ended.passed and ended.exit_code == -signal.SIGKILL
    marks = runs(marker)
    assert len(marks) == 2
    earlier, later = sorted(marks.values(), key=min)
    assert max(earlier) < min(later), "the two runs of the worktree's gate overlapped"
    assert not Path(f"{os.path.realpath(worktree)}.gate-lock").exists()
