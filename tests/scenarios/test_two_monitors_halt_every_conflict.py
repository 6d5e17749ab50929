"""Scenario: a second ``semspec monitor`` joins the stack ``semspec up`` started; pairs of tasks
that change one file at the same time are all halted, as with one monitor (ADR 0005).

Before the lease, the second monitor took half the events with its own view of who touched which
file: with six pairs, at most 1 of the 12 tasks was halted and the rest were approved and committed.
``semspec status`` names the active monitor and counts the other as standing by.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    project_config,
    pytest_gate,
    sleep_gate,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, new_id, submit
from tests.support.stack import Stack, cli_env

PAIRS = 3
SLOW_GATE_S = 15.0


def monitors(stack: Stack) -> list[dict[str, Any]]:
    """The monitor rows of ``semspec status --json``."""
    done = stack.cli("status", "--json")
    return [row for row in json.loads(done.stdout) if row["name"] == "monitor"]


def test_pairs_on_one_file_are_all_halted_with_a_second_monitor_running(stack: Stack) -> None:
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "monitor"]
    log = (stack.root / "second-monitor.log").open("ab")
    second = subprocess.Popen(argv, env=cli_env(), cwd=stack.root, stdout=log, stderr=log)
    log.close()
    tasks: list[tuple[Path, str]] = []
    try:
        deadline = time.monotonic() + 60
        while len(rows := monitors(stack)) < 2:
            assert second.poll() is None, (stack.root / "second-monitor.log").read_text()
            assert time.monotonic() < deadline, rows
            time.sleep(0.5)
        roles = sorted(str((row.get("extra") or {}).get("role")) for row in rows)
        assert roles == ["active", "standby"], rows
        shown = stack.cli("status").stdout
        assert "active, 1 standing by" in shown, shown

        script = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]
        for n in range(PAIRS):
            gates = {"additional": [sleep_gate(SLOW_GATE_S), pytest_gate()]}
            config = project_config(stack, f"pair{n}", gates=gates)
            repo = make_project(stack, f"two-monitors-{n}", config)
            # The b side declares no file: tasks declaring the same one would wait instead.
            for side, files in (("a", [FORMAT_PY]), ("b", [])):
                task_id = new_id(f"pair{n}-{side}")
                code, _ = submit(stack, repo, task_id, files, script, wait=False)
                assert code == 0
                tasks.append((repo, task_id))
        for repo, task_id in tasks:
            status = stack.wait_status(
                task_id,
                lambda s: s["pending_escalation"] is not None or bool(s["outcome"]),
                timeout_s=240,
                repo=repo,
            )
            escalation = status["pending_escalation"]
            assert escalation is not None, f"{task_id} was not halted: {json.dumps(status)[-2000:]}"
            assert escalation["reason"] == "conflicting_changes"
            assert status["commit_id"] is None
    finally:
        for repo, task_id in tasks:
            stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=repo)
        second.terminate()
        second.wait(timeout=30)
