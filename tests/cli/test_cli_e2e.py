"""The task loop end to end through the real CLI (``python -m semspec`` in a subprocess).

One stack per module, started by ``semspec up`` in a sample repository on free ports and
stopped by ``semspec down``; each test submits its own task with scripted agents and a fast
gate from the repository's ``.semspec/config.yaml``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pygit2
import pytest

from tests.support.stack import (
    Stack,
    check_gate,
    python_gate,
    running_stack,
    sample_config,
)

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
GOOD_V2 = GOOD + "\n\ndef mul(a, b):\n    return a * b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}
CHANGES = {
    "verdict": "request_changes",
    "summary": "criterion not met",
    "findings": [{"message": "mul is missing"}],
}
APPROVE_AT_ONCE = [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}]
EXIT_ESCALATED = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("e2e"), sample_config([check_gate()])) as running:
        yield running


def _tid() -> str:
    return f"e2e-{uuid.uuid4().hex[:8]}"


def _submit(
    stack: Stack,
    task_id: str,
    iterations: list[dict[str, Any]],
    *extra: str,
    repo: Path | None = None,
) -> CompletedProcess[str]:
    return stack.submit_scripted(task_id, iterations, *extra, repo=repo)


def _submit_and_wait(
    stack: Stack, task_id: str, iterations: list[dict[str, Any]], repo: Path | None = None
) -> tuple[int, dict[str, Any]]:
    done = _submit(stack, task_id, iterations, "--wait", "--json", repo=repo)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def _branch_commits(repo: Path, task_id: str) -> list[pygit2.Commit]:
    git = pygit2.Repository(str(repo))
    tip = git.lookup_branch(f"semspec/task/{task_id}").peel(pygit2.Commit)
    base = git.lookup_branch("main").peel(pygit2.Commit)
    return [c for c in git.walk(tip.id) if c.id != base.id and git.descendant_of(c.id, base.id)]


def _kinds(status: dict[str, Any], kind: str) -> list[str]:
    return [e["message"] for e in status["log"] if e["kind"] == kind]


def test_escalations_list_says_so_when_nothing_waits(stack: Stack) -> None:
    # First in the module: no task of this stack has escalated yet.
    listed = stack.cli("escalations", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "no escalation is waiting for a human"
    assert stack.cli_json("escalations", "list") == []


def test_a_task_approved_on_first_try_commits_once_and_leaves_the_checkout_alone(
    stack: Stack,
) -> None:
    git = pygit2.Repository(str(stack.repo))
    main_before = str(git.lookup_branch("main").target)
    task_id = _tid()
    code, status = _submit_and_wait(stack, task_id, APPROVE_AT_ONCE)
    assert code == 0
    assert status["outcome"] == "approved"
    commits = _branch_commits(stack.repo, task_id)
    assert [str(c.id) for c in commits] == [status["commit_id"]]
    assert f"Semspec-Task: {task_id}" in commits[0].message
    assert "Semspec-Commit-Key: " in commits[0].message
    committed = commits[0].tree["calc.py"]
    assert isinstance(committed, pygit2.Blob)
    assert committed.data.decode() == GOOD
    # The user's checkout: still on main, same tip, nothing modified or untracked.
    assert git.head.shorthand == "main"
    assert str(git.lookup_branch("main").target) == main_before
    assert git.status() == {}
    assert (stack.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_task_status_and_logs_tell_what_happened(stack: Stack) -> None:
    task_id = _tid()
    code, _ = _submit_and_wait(stack, task_id, APPROVE_AT_ONCE)
    assert code == 0
    status = stack.status(task_id)
    assert status["task_id"] == task_id
    assert status["branch"] == f"semspec/task/{task_id}"
    assert [g["name"] for g in status["last_gates"]] == ["check"]
    assert status["last_verdict"]["verdict"] == "approve"
    logs = stack.cli("task", "logs", task_id)
    assert logs.returncode == 0, logs.stderr
    for expected in ("iteration 1", "developer", "calc.py", "check: pass", "approve by", "commit"):
        assert expected in logs.stdout
    listed = stack.cli_json("task", "list")
    row = next(r for r in listed if r["task_id"] == task_id)
    assert row["state"] == "completed"
    assert row["title"] == f"task {task_id}"


def test_a_failed_gate_goes_back_to_the_developer_and_the_fix_is_approved(stack: Stack) -> None:
    code, status = _submit_and_wait(
        stack,
        _tid(),
        [
            {"developer": {"write": {"calc.py": BROKEN}}},
            {"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE},
        ],
    )
    assert code == 0
    assert status["outcome"] == "approved"
    assert status["iteration"] == 2
    gates = _kinds(status, "gate")
    assert gates[0].startswith("check: FAIL")
    assert gates[1].startswith("check: pass")


def test_request_changes_loops_back_and_then_approves(stack: Stack) -> None:
    code, status = _submit_and_wait(
        stack,
        _tid(),
        [
            {"developer": {"write": {"calc.py": GOOD}}, "reviewer": CHANGES},
            {"developer": {"write": {"calc.py": GOOD_V2}}, "reviewer": APPROVE},
        ],
    )
    assert code == 0
    assert [v.split()[0] for v in _kinds(status, "review")] == ["request_changes", "approve"]


def test_exhausted_retries_escalate_and_a_human_retry_gets_the_task_approved(
    stack: Stack,
) -> None:
    task_id = _tid()
    # Two different broken attempts (max_retries is 1), then the fix.
    code, status = _submit_and_wait(
        stack,
        task_id,
        [
            {"developer": {"write": {"calc.py": BROKEN}}},
            {"developer": {"write": {"calc.py": BROKEN + "# again\n"}}},
            {"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE},
        ],
    )
    assert code == EXIT_ESCALATED
    assert status["pending_escalation"]["reason"] == "budget_exhausted"
    pending = [e for e in stack.cli_json("escalations", "list") if e["task_id"] == task_id]
    assert len(pending) == 1
    ack = stack.cli_json(
        "escalations",
        "resolve",
        pending[0]["escalation_id"],
        "--action",
        "retry",
        "--guidance",
        "make add add",
    )
    assert ack["action"] == "retry"
    final = stack.wait_status(task_id, lambda s: bool(s["outcome"]))
    assert final["outcome"] == "approved"
    assert final["iteration"] == 3
    assert _kinds(final, "resolution") == ["retry by human: make add add"]
    assert len(_branch_commits(stack.repo, task_id)) == 1


def test_an_unchanged_fingerprint_escalates_and_abort_ends_the_task_without_a_commit(
    stack: Stack,
) -> None:
    task_id = _tid()
    code, status = _submit_and_wait(stack, task_id, [{"developer": {"write": {"calc.py": BROKEN}}}])
    assert code == EXIT_ESCALATED
    assert status["pending_escalation"]["reason"] == "no_new_evidence"
    assert status["iteration"] == 2
    resolved = stack.cli("escalations", "resolve", task_id, "--action", "abort")
    assert resolved.returncode == 0, resolved.stderr
    final = stack.wait_status(task_id, lambda s: bool(s["outcome"]))
    assert final["outcome"] == "aborted"
    assert final["commit_id"] is None
    assert _branch_commits(stack.repo, task_id) == []


def test_task_cancel_stops_a_waiting_task(stack: Stack) -> None:
    task_id = _tid()
    code, _ = _submit_and_wait(stack, task_id, [{"developer": {"write": {"calc.py": BROKEN}}}])
    assert code == EXIT_ESCALATED
    cancelled = stack.cli("task", "cancel", task_id)
    assert cancelled.returncode == 0, cancelled.stderr
    final = stack.wait_status(task_id, lambda s: bool(s["outcome"]))
    assert final["outcome"] in ("canceled", "cancelled")
    listed = stack.cli_json("task", "list")
    assert next(r for r in listed if r["task_id"] == task_id)["state"] in ("canceled", "cancelled")
    assert all(e["task_id"] != task_id for e in stack.cli_json("escalations", "list"))


def test_resolving_a_task_that_is_not_escalated_is_an_input_error(stack: Stack) -> None:
    task_id = _tid()
    code, before = _submit_and_wait(stack, task_id, APPROVE_AT_ONCE)
    assert code == 0
    done = stack.cli("escalations", "resolve", task_id, "--action", "approve")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: task {task_id} is not escalated")
    assert f"hint: see how it ended with `semspec task status {task_id}`" in done.stderr
    after = stack.status(task_id)
    assert (after["outcome"], after["commit_id"]) == ("approved", before["commit_id"])


def test_a_hanging_gate_is_killed_at_its_timeout_and_the_task_escalates(stack: Stack) -> None:
    hang = python_gate("hang", "import time; time.sleep(600)", timeout=1.5)
    repo = stack.sibling_repo("hang", sample_config([hang]))
    task_id = _tid()
    try:
        code, status = _submit_and_wait(
            stack,
            task_id,
            APPROVE_AT_ONCE,
            repo=repo,
        )
        assert code == EXIT_ESCALATED
        gate = status["last_gates"][0]
        assert (gate["name"], gate["passed"], gate["timed_out"]) == ("hang", False, True)
        assert "timed out after 1.5s" in gate["output"]
        assert status["pending_escalation"]["reason"] == "no_new_evidence"
        shown = stack.cli("task", "status", task_id, repo=repo)
        assert "gate hang: FAIL" in shown.stdout
        assert "ESCALATED (no_new_evidence)" in shown.stdout
    finally:
        # An escalated task stays active, and the risk monitor would halt later tasks that
        # touch the same file as conflicting changes.
        stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=repo)


def test_a_gate_printing_50_mb_keeps_status_bounded_and_the_full_log_on_disk(
    stack: Stack,
) -> None:
    size = 50_000_000
    flood = python_gate("flood", f"import sys; sys.stdout.write('x' * {size})")
    repo = stack.sibling_repo("flood", sample_config([flood]))
    code, status = _submit_and_wait(stack, _tid(), APPROVE_AT_ONCE, repo=repo)
    assert code == 0
    gate = status["last_gates"][0]
    assert gate["passed"] and gate["output_truncated"]
    assert gate["output_bytes"] == size
    assert len(gate["output"]) <= 16_384
    assert Path(gate["log_path"]).stat().st_size == size
