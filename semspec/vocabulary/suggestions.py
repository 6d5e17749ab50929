"""The next steps offered to a human about a task: one table for risk signals and escalations.

The risk monitor attaches them to its user signals and the task loop to the signal of an
escalation; ``semspec escalations show`` prints them. Each is a command to paste.
"""

from __future__ import annotations

import shlex
from typing import Final

from semspec.core.reasons import FallbackReason, RiskReason
from semspec.core.step_rule_table import STEP_RULES
from semspec.vocabulary.events import SuggestedAction

WAITING_LEVELS: Final = ("halt", "escalate")
"""Levels at which the task waits for ``semspec escalations resolve``."""

_GUIDANCE: Final[dict[str, str]] = {
    RiskReason.RETRY_LIMIT: "explain what the previous attempts missed",
    RiskReason.CONTEXT_PRESSURE: "continue from the checkpoint with the remaining criteria",
    RiskReason.SCOPE_CREEP: "stay within the task's files",
    RiskReason.CONFLICTING_CHANGES: "rebase on the other task's branch, then continue",
    RiskReason.REPEATED_FINGERPRINT: "try a different approach; the last attempt changed nothing",
    RiskReason.CONTEXT_EXHAUSTION: "finish the current criterion, then checkpoint",
    RiskReason.PROTECTED_PATH: "leave .semspec/ alone and keep symlinks inside the worktree",
    FallbackReason.NO_CHANGE: "edit the files; check that the agent CLI may write and run tools",
    FallbackReason.SECRET_IN_CHANGE: "remove the secret from the file named; read it from the "
    "environment at run time instead",
    FallbackReason.LAND_CONFLICT: "make the change again on the current base branch",
    FallbackReason.LAND_GATE_FAILED: "make the gate pass on the current base branch",
    **{spec.reason: spec.guidance for spec in STEP_RULES},
}
_BUDGET_REASONS: Final = (RiskReason.CONTEXT_PRESSURE, RiskReason.CONTEXT_EXHAUSTION)
_ACCEPT: Final[dict[str, str]] = {
    RiskReason.SCOPE_CREEP: "accept the extra files",
    FallbackReason.UNKNOWN_PRICE: "run the model without a price for the rest of the task",
    FallbackReason.SECRET_IN_CHANGE: "approve anyway (the commit is refused again: the task fails)",
    FallbackReason.LAND_CONFLICT: "land the task branch again as it is (after fixing it by hand)",
    FallbackReason.LAND_GATE_FAILED: "land the task branch again as it is",
    FallbackReason.LAND_REFUSED: "land again (after cleaning the checkout)",
}
"""What ``approve`` means for a reason, where it is not "approve the work as it is"."""


def suggested_actions(task_id: str, reason: str, level: str = "escalate") -> list[SuggestedAction]:
    """What a human can do about ``task_id`` stopped or flagged for ``reason`` at ``level``.

    A task waiting for an answer is offered every answer; below that, only the answers its
    reason calls for (scope creep: retry or accept; context pressure: more budget).
    """
    task = shlex.quote(task_id)
    waits = level in WAITING_LEVELS
    steps = [("see where the task stands", f"semspec task status {task}")]
    if waits:
        steps.append(("see what happened", f"semspec task logs {task}"))
    looks = [SuggestedAction(description=d, command=c) for d, c in steps]
    return looks + _answers(task, reason, waits=waits, dollars=True)


def escalation_answers(
    task_id: str, reason: str, *, dollar_budget: bool = True
) -> list[SuggestedAction]:
    """The ``semspec escalations resolve`` answers to ``task_id`` waiting for ``reason``, worded
    for it (for ``unknown_price``, ``approve`` accepts the model); ``--extra-usd`` only for a task
    with a ``dollar_budget``."""
    return _answers(shlex.quote(task_id), reason, waits=True, dollars=dollar_budget)


def _answers(task: str, reason: str, *, waits: bool, dollars: bool) -> list[SuggestedAction]:
    resolve = f"semspec escalations resolve {task} --action"
    guidance = shlex.quote(_GUIDANCE.get(reason, "..."))
    steps: list[tuple[str, str]] = []
    if waits or reason == RiskReason.SCOPE_CREEP:
        steps.append(
            ("let the developer try again with guidance", f"{resolve} retry --guidance {guidance}")
        )
        steps.append((_ACCEPT.get(reason, "approve as is"), f"{resolve} approve"))
    if waits:
        steps.append(("abort the task", f"{resolve} abort"))
    if waits or reason in _BUDGET_REASONS:
        steps.append(("grant more retries", f"{resolve} extend-budget --extra-retries N"))
    if reason == FallbackReason.BUDGET_EXHAUSTED and dollars:
        # The same reason names a spent retry bound and a spent dollar budget.
        steps.append(("add dollars to the budget", f"{resolve} extend-budget --extra-usd N"))
    return [SuggestedAction(description=d, command=c) for d, c in steps]
