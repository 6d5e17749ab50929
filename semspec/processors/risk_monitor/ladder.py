"""The graduated response ladder ``observe → log → warn → pause → halt → escalate``."""

from __future__ import annotations

from typing import get_args

from semspec.core.config.models import RiskLevel
from semspec.core.reasons import level_rank
from semspec.vocabulary.subjects import SIGNAL_LEVELS

LADDER: tuple[RiskLevel, ...] = get_args(RiskLevel)
"""The levels lowest first (the same order as ``core.reasons.RISK_LEVELS``)."""
TOP = LADDER[-1]


def next_level(base: RiskLevel, previous: str | None) -> RiskLevel | None:
    """Level of a rule that fires again: ``base`` the first time, then one step per repeat.

    Returns ``None`` when nothing new is to be emitted: the rule already sits at the top, or at
    or above where it would go (levels never go down within an episode).
    """
    if previous is None:
        return base
    if previous == TOP:
        return None
    candidate = LADDER[max(level_rank(previous), level_rank(base) - 1) + 1]
    return candidate if level_rank(candidate) > level_rank(previous) else None


def is_published(level: str) -> bool:
    """Whether a level goes out on ``user.signal.<level>`` (``observe`` and ``log`` only log)."""
    return level in SIGNAL_LEVELS


def workflow_action(level: str, rule: str) -> str:
    """The workflow signal for a level: pause and halt map to themselves; scope creep flags.

    ``escalate`` sends nothing: every rule that reaches it has either halted the task already or
    is one the workflow escalates by itself (retries, repeated fingerprint).
    """
    if level in ("pause", "halt"):
        return level
    if rule == "scope_creep" and level_rank(level) < level_rank("pause"):
        return "flag"
    return ""
