"""The task loop's bounds as pure decisions over plain numbers.

``TaskWorkflow`` asks these functions whether an iteration, a retry or a checkpoint is still
within its bound, and what a human's ``extend_budget`` answer grants; it only acts on the answer.
No Temporal, no I/O: they are tested directly (``tests/workflow/test_task_bounds_rules.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from semspec.core.reasons import FallbackReason
from semspec.vocabulary.review import Verdict
from semspec.workflow.task.messages import ResolutionAction

MAX_CHECKPOINTS = 5
"""Checkpoints (continue-as-new) one task may take; the next one escalates instead."""
MAX_CARRIED_LOG = 200
"""Log lines a checkpoint carries into the new run (the newest ones)."""
GATES_SLACK_S = 60.0
"""Time the gates step gets on top of the gates' own timeouts (checkout, output capture)."""
FALLBACK_REASONS = frozenset(r.value for r in FallbackReason)


@dataclass(frozen=True)
class Escalate:
    """A bound is hit: ask a human, for this reason, with this message."""

    reason: FallbackReason
    message: str


def iteration_cap(iteration: int, max_iterations: int) -> Escalate | None:
    """Whether another iteration may start after ``iteration`` of at most ``max_iterations``."""
    if iteration < max_iterations:
        return None
    return Escalate(FallbackReason.BUDGET_EXHAUSTED, f"iteration cap of {max_iterations} reached")


def after_failure(
    fingerprint: str, seen: Sequence[str], retries: int, max_retries: int, why: str
) -> tuple[int, Escalate | None]:
    """Retries used after a failed attempt, and the escalation it calls for (None: retry).

    Evidence identical to an earlier attempt escalates at once and uses no retry; otherwise the
    attempt uses one, and escalates when that goes past ``max_retries``.
    """
    if fingerprint in seen:
        message = f"{why}, and the evidence is identical to an earlier attempt"
        return retries, Escalate(FallbackReason.NO_NEW_EVIDENCE, message)
    used = retries + 1
    if used <= max_retries:
        return used, None
    # The status counts the failed attempt too (`retries`); the message names only the bound,
    # so the two never read as different numbers for the same thing.
    message = f"{why}; no retry left ({max_retries} allowed)"
    return used, Escalate(FallbackReason.BUDGET_EXHAUSTED, message)


def after_review(verdict: Verdict, reason: str | None, summary: str) -> Escalate | None:
    """Whether a review that did not approve needs a human (None: retry with its findings).

    A reviewer that gave up names a fallback reason; a rejection says no retry will do.
    """
    if reason in FALLBACK_REASONS:
        return Escalate(FallbackReason(reason), summary or "reviewer gave up")
    if verdict == "reject":
        return Escalate(FallbackReason.LOW_CONFIDENCE, f"reviewer rejected: {summary}")
    return None


def checkpoint_cap(number: int, why: str) -> Escalate | None:
    """Whether checkpoint ``number`` (counted from 1) may be taken; else the escalation."""
    if number <= MAX_CHECKPOINTS:
        return None
    message = f"{why}; all {MAX_CHECKPOINTS} checkpoints are used"
    return Escalate(FallbackReason.BUDGET_EXHAUSTED, message)


def granted_retries(action: ResolutionAction, extra_retries: int, configured: int) -> int:
    """Retries a human's answer adds: ``extend_budget`` grants what it names (the configured
    bound when it names none); every other answer grants none."""
    if action != "extend_budget":
        return 0
    return extra_retries or configured


def extended(max_retries: int, max_iterations: int, extra: int) -> tuple[int, int]:
    """The retry bound and iteration cap after ``extra`` granted retries.

    Each granted retry needs an iteration, and the answer itself starts one more.
    """
    return max_retries + extra, max_iterations + extra + 1


def context_after(used: int, base_tokens: int, tokens: int) -> int:
    """The loop's context after an agent call of ``tokens``: the task itself (``base_tokens``)
    plus what this run's calls added."""
    return max(used, base_tokens) + tokens


def subtask_base_tokens(
    base_tokens: int, file_tokens: Mapping[str, int], files: Iterable[str]
) -> int:
    """Where a subtask's context starts: the parent's base without the other groups' files."""
    mine = set(files)
    others = sum(n for path, n in file_tokens.items() if path not in mine)
    return max(base_tokens - others, 0)


def gates_timeout_s(gate_timeouts: Iterable[float]) -> float:
    """How long the gates step may take: every gate's timeout in turn, plus the slack."""
    return sum(gate_timeouts) + GATES_SLACK_S
