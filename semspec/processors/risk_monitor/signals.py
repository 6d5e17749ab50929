"""Building user signals: deterministic ids, readable messages and ready-to-run next steps."""

from __future__ import annotations

import hashlib
import shlex
from typing import Any

from semspec.core.reasons import RiskReason
from semspec.vocabulary.events import SuggestedAction, UserSignal

_GUIDANCE: dict[str, str] = {
    RiskReason.RETRY_LIMIT: "explain what the previous attempts missed",
    RiskReason.CONTEXT_PRESSURE: "continue from the checkpoint with the remaining criteria",
    RiskReason.SCOPE_CREEP: "stay within the task's files",
    RiskReason.CONFLICTING_CHANGES: "rebase on the other task's branch, then continue",
    RiskReason.REPEATED_FINGERPRINT: "try a different approach; the last attempt changed nothing",
    RiskReason.CONTEXT_EXHAUSTION: "finish the current criterion, then checkpoint",
}


def signal_id(task_id: str, reason: str, level: str, episode: int) -> str:
    """Id of the one signal a (task, rule, level, episode) may produce; the Nats-Msg-Id."""
    key = f"{task_id}\x00{reason}\x00{level}\x00{episode}".encode()
    return "sig-" + hashlib.sha256(key).hexdigest()[:32]


def suggested_actions(task_id: str, reason: str, level: str) -> list[SuggestedAction]:
    """Next steps for a human, each with a command they can paste."""
    task = shlex.quote(task_id)
    guidance = shlex.quote(_GUIDANCE.get(reason, "continue"))
    actions = [SuggestedAction("see where the task stands", f"semspec task status {task}")]
    if level in ("halt", "escalate") or reason == RiskReason.SCOPE_CREEP:
        actions.append(
            SuggestedAction(
                "let the developer try again with guidance",
                f"semspec escalations resolve {task} --action retry --guidance {guidance}",
            )
        )
    if reason == RiskReason.SCOPE_CREEP:
        actions.append(
            SuggestedAction(
                "accept the extra files", f"semspec escalations resolve {task} --action approve"
            )
        )
    if reason in (RiskReason.CONTEXT_PRESSURE, RiskReason.CONTEXT_EXHAUSTION):
        actions.append(
            SuggestedAction(
                "give the task more budget",
                f"semspec escalations resolve {task} --action extend_budget",
            )
        )
    if level in ("halt", "escalate"):
        actions.append(SuggestedAction("stop the task", f"semspec task cancel {task}"))
    return actions


def describe(task_id: str, reason: str, level: str, evidence: dict[str, Any]) -> str:
    """One line saying what was seen, for people watching the signals."""
    match reason:
        case RiskReason.RETRY_LIMIT:
            what = f"{evidence.get('retries')} retries (limit {evidence.get('threshold')})"
        case RiskReason.CONTEXT_PRESSURE:
            what = (
                f"context {evidence.get('utilization', 0):.0%} full "
                f"(limit {evidence.get('threshold', 0):.0%})"
            )
        case RiskReason.SCOPE_CREEP:
            what = "touched files outside the task: " + ", ".join(evidence.get("outside", []))
        case RiskReason.CONFLICTING_CHANGES:
            others = ", ".join(evidence.get("other_tasks", []))
            what = f"changes {', '.join(evidence.get('files', []))} also changed by {others}"
        case RiskReason.REPEATED_FINGERPRINT:
            what = f"the same evidence fingerprint {evidence.get('count')} times"
        case RiskReason.CONTEXT_EXHAUSTION:
            what = (
                f"{evidence.get('tokens_per_iteration')} tokens per iteration with "
                f"{evidence.get('tokens_left')} left"
            )
        case _:
            what = reason
    return f"task {task_id}: {what} → {level}"


def build_signal(
    *,
    task_id: str,
    plan_id: str | None,
    reason: str,
    level: str,
    episode: int,
    evidence: dict[str, Any],
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
