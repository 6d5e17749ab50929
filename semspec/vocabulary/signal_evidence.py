"""What a user signal (``user.signal.<level>``) shows as ``evidence``, one model per rule.

A risk rule's signal carries the numbers it fired on; the loop's own escalation carries its
``EscalationRaised`` payload. The models have no tag: each has its own set of required keys,
and unknown keys are errors, so exactly one of them fits a valid signal.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, NonNegativeInt

from semspec.core.config.models import MAX_STEP_WINDOW
from semspec.vocabulary.event_payloads import AgentRole, EscalationRaised, Payload


class RuleEvidence(Payload):
    """Where a rule fired: the event and its iteration."""

    event_id: str
    """The event the rule fired on."""
    iteration: NonNegativeInt
    """That event's iteration."""


class RetryLimitEvidence(RuleEvidence):
    """``retry_limit``: more retries than the threshold (plus what humans granted)."""

    retries: NonNegativeInt
    """Retries the event reported."""
    threshold: float
    """The rule's threshold plus the retries humans granted."""


class ContextPressureEvidence(RuleEvidence):
    """``context_pressure``: the context is fuller than the threshold."""

    tokens_used: NonNegativeInt
    """Tokens of the developer's context."""
    window: NonNegativeInt
    """The context window."""
    utilization: float
    """``tokens_used / window``."""
    threshold: float
    """The rule's threshold, as a fraction."""


class TokensLeftEvidence(RuleEvidence):
    """``context_exhaustion``: the tokens left do not cover the next iterations' growth."""

    tokens_used: NonNegativeInt
    """Tokens of the developer's context."""
    window: NonNegativeInt
    """The context window."""
    tokens_per_iteration: float
    """Average growth per iteration."""
    tokens_left: int
    """``window - tokens_used`` (negative once the window overflowed)."""


class ScopeCreepEvidence(RuleEvidence):
    """``scope_creep``: files outside the task, and which of them are new in this episode."""

    outside: list[str]
    """Touched files outside the task (and outside ``scope.allow``)."""
    new: list[str]
    """Those not signalled before in this episode."""
    task_files: list[str]
    """The task's own files."""


class ProtectedPathEvidence(RuleEvidence):
    """``protected_path``: the change touches ``.semspec/`` or adds a symlink leaving the
    worktree."""

    semspec_paths: list[str]
    """Changed paths under ``.semspec/``."""
    escaping_symlinks: list[str]
    """Changed symlinks whose target lies outside the worktree."""
    new: list[str]
    """Those not signalled before in this episode."""


class ConflictEvidence(Payload):
    """``conflicting_changes``: files this task shares with other active tasks."""

    event_id: str
    """The ``files`` event that revealed the conflict."""
    files: list[str]
    """Files this task and the others both touched."""
    other_tasks: list[str]
    """The other active tasks touching them."""


class FingerprintEvidence(RuleEvidence):
    """``repeated_fingerprint``: the same evidence fingerprint seen again."""

    fingerprint: str
    """The evidence fingerprint."""
    count: NonNegativeInt
    """Times it was seen in this episode."""


class StepPatternEvidence(RuleEvidence):
    """A step rule (a row of ``core.step_rule_table``, such as ``repeated_action``): the steps
    that made the pattern."""

    role: AgentRole
    """The agent whose steps they are."""
    steps: Annotated[list[str], Field(max_length=MAX_STEP_WINDOW)]
    """The event ids of those steps, oldest first (the last is ``event_id``)."""
    step_numbers: Annotated[list[NonNegativeInt], Field(max_length=MAX_STEP_WINDOW)]
    """Their numbers within the agent's turn, in the same order."""
    tools: Annotated[list[str], Field(max_length=2)]
    """The tools repeated (two for ``alternating_actions``; none for model calls)."""


SignalEvidence = (
    RetryLimitEvidence
    | ContextPressureEvidence
    | TokensLeftEvidence
    | ScopeCreepEvidence
    | ProtectedPathEvidence
    | ConflictEvidence
    | FingerprintEvidence
    | StepPatternEvidence
    | EscalationRaised
)
"""The evidence of any user signal."""
