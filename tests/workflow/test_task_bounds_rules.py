"""The task loop's bounds as pure rules: iterations, retries, fingerprints, checkpoints, grants.

No server: each rule is a plain function of plain values, checked at the bound, one past it and
at zero. ``test_task_bounds.py`` shows the same bounds holding in a running workflow.
"""

from __future__ import annotations

import pytest

from semspec.core.reasons import FallbackReason
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.review import Verdict
from semspec.workflow.context.monitor import ContextTracker
from semspec.workflow.task.loop import bounds
from semspec.workflow.task.loop.bounds import Escalate
from semspec.workflow.task.loop.carry import LoopState, carry_over, restore
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.messages import (
    CheckpointStep,
    LogEntry,
    ResolutionAction,
    TaskInput,
    TaskSpec,
    TaskStatus,
)

BUDGET = FallbackReason.BUDGET_EXHAUSTED
SAME = FallbackReason.NO_NEW_EVIDENCE


@pytest.mark.parametrize(
    ("iteration", "cap", "expected"),
    [
        (0, 12, None),
        (11, 12, None),
        (12, 12, Escalate(BUDGET, "iteration cap of 12 reached")),
        (13, 12, Escalate(BUDGET, "iteration cap of 12 reached")),
        (0, 0, Escalate(BUDGET, "iteration cap of 0 reached")),
    ],
    ids=["first", "last-allowed", "at-cap", "past-cap", "zero-cap"],
)
def test_an_iteration_starts_only_below_the_cap(
    iteration: int, cap: int, expected: Escalate | None
) -> None:
    assert bounds.iteration_cap(iteration, cap) == expected


@pytest.mark.parametrize(
    ("seen", "retries", "max_retries", "expected"),
    [
        ([], 0, 3, (1, None)),
        (["a"], 2, 3, (3, None)),
        (["a", "b"], 3, 3, (4, Escalate(BUDGET, "gate failed; no retry left (3 allowed)"))),
        ([], 0, 0, (1, Escalate(BUDGET, "gate failed; no retry left (0 allowed)"))),
        (
            ["fp"],
            0,
            3,
            (0, Escalate(SAME, "gate failed, and the evidence is identical to an earlier attempt")),
        ),
        (
            ["a", "fp"],
            3,
            3,
            (3, Escalate(SAME, "gate failed, and the evidence is identical to an earlier attempt")),
        ),
    ],
    ids=[
        "first-retry",
        "retry-at-bound",
        "one-past-bound",
        "zero-bound",
        "same-evidence-uses-no-retry",
        "same-evidence-wins-at-bound",
    ],
)
def test_a_failed_attempt_retries_until_the_bound_or_the_same_evidence_comes_back(
    seen: list[str],
    retries: int,
    max_retries: int,
    expected: tuple[int, Escalate | None],
) -> None:
    assert bounds.after_failure("fp", seen, retries, max_retries, "gate failed") == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1, None),
        (bounds.MAX_CHECKPOINTS, None),
        (
            bounds.MAX_CHECKPOINTS + 1,
            Escalate(BUDGET, f"pause; all {bounds.MAX_CHECKPOINTS} checkpoints are used"),
        ),
    ],
    ids=["first", "at-bound", "one-past"],
)
def test_a_checkpoint_is_taken_only_within_the_bound(
    number: int, expected: Escalate | None
) -> None:
    assert bounds.checkpoint_cap(number, "pause") == expected


@pytest.mark.parametrize(
    ("verdict", "reason", "summary", "expected"),
    [
        ("request_changes", None, "add mul", None),
        ("request_changes", "not_a_fallback", "add mul", None),
        (
            "reject",
            None,
            "wrong idea",
            Escalate(FallbackReason.LOW_CONFIDENCE, "reviewer rejected: wrong idea"),
        ),
        (
            "request_changes",
            "abstain",
            "cannot judge",
            Escalate(FallbackReason.ABSTAIN, "cannot judge"),
        ),
        ("request_changes", "timeout", "", Escalate(FallbackReason.TIMEOUT, "reviewer gave up")),
    ],
    ids=["retry", "unknown-reason-retries", "reject", "gave-up", "gave-up-silently"],
)
def test_a_review_that_did_not_approve_retries_unless_the_reviewer_rejected_or_gave_up(
    verdict: Verdict, reason: str | None, summary: str, expected: Escalate | None
) -> None:
    assert bounds.after_review(verdict, reason, summary) == expected


@pytest.mark.parametrize(
    ("action", "extra", "configured", "expected"),
    [
        ("extend_budget", 2, 3, 2),
        ("extend_budget", 0, 3, 3),
        ("extend_budget", 0, 0, 0),
        ("retry", 5, 3, 0),
        ("approve", 5, 3, 0),
        ("abort", 0, 3, 0),
    ],
    ids=["named", "none-named-takes-configured", "zero-configured", "retry", "approve", "abort"],
)
def test_only_extend_budget_grants_retries(
    action: ResolutionAction, extra: int, configured: int, expected: int
) -> None:
    assert bounds.granted_retries(action, extra, configured) == expected


@pytest.mark.parametrize(
    ("extra", "expected"),
    [(0, (3, 13)), (1, (4, 14)), (6, (9, 19))],
)
def test_granted_retries_raise_the_bound_and_the_cap_by_one_iteration_each_plus_one(
    extra: int, expected: tuple[int, int]
) -> None:
    assert bounds.extended(3, 12, extra) == expected


@pytest.mark.parametrize(
    ("used", "base", "tokens", "expected"),
    [(0, 1_000, 500, 1_500), (2_000, 1_000, 500, 2_500), (0, 0, 0, 0), (300, 1_000, 0, 1_000)],
    ids=["starts-at-the-task", "grows-from-use", "zero", "no-tokens-still-counts-the-task"],
)
def test_the_context_starts_at_the_task_and_grows_by_each_call(
    used: int, base: int, tokens: int, expected: int
) -> None:
    assert bounds.context_after(used, base, tokens) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [(["a.py"], 800), (["a.py", "b.py"], 1_000), ([], 500)],
    ids=["one-group", "all-files", "no-files"],
)
def test_a_subtask_starts_from_the_parents_base_without_the_other_groups_files(
    files: list[str], expected: int
) -> None:
    assert bounds.subtask_base_tokens(1_000, {"a.py": 300, "b.py": 200}, files) == expected


def test_a_subtask_base_never_goes_below_zero() -> None:
    assert bounds.subtask_base_tokens(100, {"a.py": 300, "b.py": 200}, ["a.py"]) == 0


@pytest.mark.parametrize(
    ("timeouts", "expected"),
    [([], bounds.GATES_SLACK_S), ([10.0, 20.5], 30.5 + bounds.GATES_SLACK_S)],
    ids=["no-gates", "two-gates"],
)
def test_the_gates_step_gets_every_gates_timeout_plus_slack(
    timeouts: list[float], expected: float
) -> None:
    assert bounds.gates_timeout_s(timeouts) == expected


def test_a_checkpoint_carries_every_bound_into_the_next_run() -> None:
    inp = TaskInput(TaskSpec("t1", "Title", "/repo", criteria=["c"]), gates=[])
    status = TaskStatus("t1", "Title", "gates", 4, 2, 5, fingerprints=["f1"])
    status.log = [LogEntry(n, "escalation" if n == 1 else "gate", "x") for n in range(250)]
    signals = RiskSignals(flags=["scope_creep: x.py"], scope_flagged={"x.py"}, seen={"s1"})
    signals.halt = RiskSignalInput("conflicting_changes", "halt", "s2")
    state = LoopState(5, 14, ContextTracker(window=64_000), base_tokens=900, tokens_spent=7_000)
    state.escalations, state.feedback, state.guidance = 3, ["gate failed"], "use a loop"
    step = CheckpointStep("semspec/checkpoint/t1/1", "c0ffee", ["decided x"])

    cont = carry_over(inp, status, signals, state, step, 1, 12.5)
    new_status = TaskStatus("t1", "Title", "starting", 0, 0, 3)
    new_signals = RiskSignals(flags=new_status.flags)
    new_state = LoopState(3, 12, ContextTracker(window=32_000))
    restore(cont, new_status, new_signals, new_state)

    assert (new_status.iteration, new_status.retries, new_status.max_retries) == (4, 2, 5)
    assert (new_state.max_retries, new_state.max_iterations) == (5, 14)
    assert new_status.fingerprints == ["f1"]
    assert len(new_status.log) == bounds.MAX_CARRIED_LOG
    assert new_status.checkpoints == ["semspec/checkpoint/t1/1"]
    assert (new_state.escalations, new_state.feedback, new_state.guidance) == (
        3,
        ["gate failed"],
        "use a loop",
    )
    assert (new_state.tokens_spent, new_state.elapsed_before) == (7_000, 12.5)
    assert (new_state.tracker.window, new_state.base_tokens) == (64_000, 900)
    assert new_state.decisions == ["decided x"]
    assert new_status.flags == ["scope_creep: x.py"]
    assert (new_signals.seen, new_signals.scope_flagged) == ({"s1"}, {"x.py"})
    assert new_signals.halt == signals.halt
