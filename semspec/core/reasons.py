"""Reason codes that label every stop, escalation and risk signal."""

from __future__ import annotations

from enum import StrEnum


class FallbackReason(StrEnum):
    """Why a loop stopped or escalated (canonical set of the bounded-retry design)."""

    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    TRANSPORT_ERROR = "transport_error"
    ABSTAIN = "abstain"
    LOW_CONFIDENCE = "low_confidence"
    NO_NEW_EVIDENCE = "no_new_evidence"
    BUDGET_EXHAUSTED = "budget_exhausted"
    UNKNOWN_PRICE = "unknown_price"
    """A task with a dollar budget would run a model the registry has no price for."""
    SECRET_IN_CHANGE = "secret_in_change"
    """The approved change holds a secret (a worker's secret value or a key shape): not
    committed; the escalation names file and line, never the value."""
    NO_CHANGE = "no_change"
    """The developer's turns left the worktree unchanged, even after being told so."""
    LAND_CONFLICT = "land_conflict"
    """Approved work that lands by itself (``loop.land: auto``) conflicts with the base branch,
    which moved since the task started; the escalation names the files."""
    LAND_GATE_FAILED = "land_gate_failed"
    """A required gate fails on the approved work combined with the moved base branch; the
    escalation names the gate and carries its output."""
    LAND_REFUSED = "land_refused"
    """The land of approved work was refused without a conflict (a checkout of the base with
    uncommitted changes, a base that kept moving, a land that failed)."""


class RiskReason(StrEnum):
    """Why the risk monitor raised a signal; one per rule over loop events. The step rules'
    reasons are the rows of ``core.step_rule_table.STEP_RULES``."""

    RETRY_LIMIT = "retry_limit"
    CONTEXT_PRESSURE = "context_pressure"
    SCOPE_CREEP = "scope_creep"
    CONFLICTING_CHANGES = "conflicting_changes"
    REPEATED_FINGERPRINT = "repeated_fingerprint"
    CONTEXT_EXHAUSTION = "context_exhaustion"
    PROTECTED_PATH = "protected_path"


RISK_LEVELS: tuple[str, ...] = ("observe", "log", "warn", "pause", "halt", "escalate")


def level_rank(level: str) -> int:
    """Position of ``level`` on the ladder ``observe → … → escalate`` (unknown: -1)."""
    return RISK_LEVELS.index(level) if level in RISK_LEVELS else -1
