"""Building user signals: deterministic ids, readable messages and ready-to-run next steps."""

from __future__ import annotations

import hashlib

from semspec.core.config.models import RiskLevel
from semspec.core.step_rule_table import step_rule
from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.signal_evidence import (
    ConflictEvidence,
    ContextPressureEvidence,
    FingerprintEvidence,
    ProtectedPathEvidence,
    RetryLimitEvidence,
    ScopeCreepEvidence,
    SignalEvidence,
    StepPatternEvidence,
    TokensLeftEvidence,
)
from semspec.vocabulary.suggestions import suggested_actions


def signal_id(task_id: str, reason: str, level: str, episode: int) -> str:
    """Id of the one signal a (task, rule, level, episode) may produce; the Nats-Msg-Id."""
    key = f"{task_id}\x00{reason}\x00{level}\x00{episode}".encode()
    return "sig-" + hashlib.sha256(key).hexdigest()[:32]


def describe(task_id: str, reason: str, level: str, evidence: SignalEvidence) -> str:
    """One line saying what was seen, for people watching the signals."""
    match evidence:
        case RetryLimitEvidence():
            what = f"{evidence.retries} retries (limit {evidence.threshold:g})"
        case ContextPressureEvidence():
            what = f"context {evidence.utilization:.0%} full (limit {evidence.threshold:.0%})"
        case ScopeCreepEvidence():
            what = "touched files outside the task: " + ", ".join(evidence.outside)
        case ProtectedPathEvidence():
            what = "changed protected paths: " + ", ".join(
                [
                    *evidence.semspec_paths,
                    *(f"{p} (symlink out of the worktree)" for p in evidence.escaping_symlinks),
                ]
            )
        case ConflictEvidence():
            others = ", ".join(evidence.other_tasks)
            what = f"changes {', '.join(evidence.files)} also changed by {others}"
        case FingerprintEvidence():
            what = f"the same evidence fingerprint {evidence.count} times"
        case TokensLeftEvidence():
            what = (
                f"{evidence.tokens_per_iteration:g} tokens per iteration with "
                f"{evidence.tokens_left} left"
            )
        case StepPatternEvidence():
            spec = step_rule(reason)
            what = f"the {evidence.role} {spec.pattern if spec else reason}" + (
                f" ({', '.join(evidence.tools)})" if evidence.tools else ""
            )
            what += " at steps " + ", ".join(str(n) for n in evidence.step_numbers)
        case _:
            what = reason
    return f"task {task_id}: {what} → {level}"


def build_signal(
    *,
    task_id: str,
    plan_id: str | None,
    reason: str,
    level: RiskLevel,
    episode: int,
    evidence: SignalEvidence,
    at: str,
) -> UserSignal:
    """The ``UserSignal`` for a rule that reached ``level``; same inputs, same signal."""
    return UserSignal(
        signal_id=signal_id(task_id, reason, level, episode),
        task_id=task_id,
        level=level,
        reason=reason,
        evidence=evidence,
        suggested_actions=suggested_actions(task_id, reason, level),
        plan_id=plan_id,
        message=describe(task_id, reason, level, evidence),
        at=at,
    )
