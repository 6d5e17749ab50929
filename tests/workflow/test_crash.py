"""Crash tests: kill the worker, NATS or Temporal in the middle of a task started through the CLI.

The stack is started by ``semspec up`` and its PIDs are read from ``.semspec/run/services.json``;
a killed worker is replaced by running ``semspec up`` again (it starts only what is down).
The gate sleeps a few seconds so there is a moment to kill things while it runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pygit2
import pytest

from tests.support.event_order import check_one_turn
from tests.support.stack import (
    Stack,
    check_gate,
    count_signals,
    running_stack,
    sample_config,
    write_script,
)
from tests.support.stream_reads import task_events

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}
GATE_SLEEP_S = 4


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    slow_check = check_gate(before=f"import time; time.sleep({GATE_SLEEP_S})")
    # No retries: the first failed gate escalates, so each test sees exactly one escalation.
    config = sample_config([slow_check], loop={"max_retries": 0, "activity_attempts": 3})
    with running_stack(tmp_path_factory.mktemp("crash"), config) as running:
        yield running


def _submit(stack: Stack, iterations: list[dict[str, Any]]) -> str:
    task_id = f"crash-{uuid.uuid4().hex[:8]}"
    script = write_script(stack.root / "scripts" / f"{task_id}.yaml", iterations)
    done = stack.cli(
        "task", "submit", f"task {task_id}", "--id", task_id, "--file", "calc.py",
        "--script", str(script), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return task_id


def _commits_on_branch(stack: Stack, task_id: str) -> int:
    git = pygit2.Repository(str(stack.repo))
    tip = git.lookup_branch(f"semspec/task/{task_id}").peel(pygit2.Commit)
    base = git.lookup_branch("main").peel(pygit2.Commit)
    return sum(1 for c in git.walk(tip.id) if c.id != base.id and git.descendant_of(c.id, base.id))


def _ended_or_escalated(status: dict[str, Any]) -> bool:
    return bool(status["outcome"]) or status["phase"] == "escalated"


def _restart_worker(stack: Stack) -> None:
    up = stack.cli("up", "--json", timeout=120)
    assert up.returncode == 0, up.stderr
    assert stack.records()["worker"].pid != 0


def test_a_worker_killed_mid_task_is_replaced_and_the_task_commits_and_escalates_once(
    stack: Stack,
) -> None:
    task_id = _submit(
        stack,
        [
            {"developer": {"write": {"calc.py": BROKEN}}},
            {"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE},
        ],
    )
    stack.wait_status(task_id, lambda s: s["phase"] == "gates")
    killed = stack.kill("worker")
    _restart_worker(stack)
    assert stack.records()["worker"].pid != killed
    # The gate activity times out on its heartbeat and runs again on the new worker.
    escalated = stack.wait_status(task_id, lambda s: s["phase"] == "escalated", timeout_s=90)
    assert escalated["pending_escalation"]["reason"] == "budget_exhausted"
    # A crash while waiting for a human must not publish the escalation again on replay.
    stack.kill("worker")
    _restart_worker(stack)
    resolved = stack.cli(
        "escalations", "resolve", task_id, "--action", "retry", "--guidance", "add must add"
    )
    assert resolved.returncode == 0, resolved.stderr
    final = stack.wait_status(task_id, lambda s: bool(s["outcome"]), timeout_s=90)
    assert final["outcome"] == "approved"
    assert _commits_on_branch(stack, task_id) == 1
    assert [e["kind"] for e in final["log"]].count("escalation") == 1
    assert count_signals(stack.nats_url(), task_id, "escalate") == 1


def test_a_task_goes_on_while_nats_is_down_and_its_events_outlive_a_killed_worker(
    stack: Stack,
) -> None:
    task_id = _submit(stack, [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}])
    stack.wait_status(task_id, lambda s: s["phase"] == "gates")
    stack.kill("nats")
    try:
        final = stack.wait_status(task_id, _ended_or_escalated, timeout_s=120)
        assert final["outcome"] == "approved", final["pending_escalation"]
        # gate, context, the reviewer's step, review, finished
        assert (final["events_dropped"], final["events_pending"]) == (0, 5)
        shown = stack.cli("task", "status", task_id)
        assert "monitor events waiting for NATS: 5" in shown.stdout
        # The waiting events are in the workflow's history: a killed worker loses none.
        stack.kill("worker")
    finally:
        stack.restart_nats()
    _restart_worker(stack)
    stack.wait_status(task_id, lambda s: s["events_pending"] == 0, timeout_s=90)
    assert _commits_on_branch(stack, task_id) == 1
    kinds = [e.kind for e in asyncio.run(task_events(stack.nats_url(), task_id))]
    # The developer step published its files before NATS went down, maybe ahead of the
    # iteration event the outbox held; the rest waited in the outbox, in order.
    check_one_turn(kinds, ["files", "gate", "context", "review"])
    assert kinds.count("step") == 2


def test_a_temporal_server_killed_mid_task_is_restarted_and_the_task_commits_once(
    stack: Stack,
) -> None:
    task_id = _submit(stack, [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}])
    stack.wait_status(task_id, lambda s: s["phase"] == "gates")
    stack.kill("temporal")
    # The worker and the gate keep running while the server is gone; its history is on disk.
    stack.restart_temporal()
    final = stack.wait_status(task_id, _ended_or_escalated, timeout_s=120)
    assert final["outcome"] == "approved", final["pending_escalation"]
    assert _commits_on_branch(stack, task_id) == 1
    assert [e["kind"] for e in final["log"]].count("escalation") == 0
    assert count_signals(stack.nats_url(), task_id, "escalate") == 0
