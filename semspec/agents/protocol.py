"""The seam between the task loop and whatever plays the developer and reviewer roles.

The task loop's activities build a request, hand it to an agent, and get a typed result back.
Providers (scripted, OpenAI-compatible, Anthropic, an external CLI) implement these protocols,
so tests hand in a real alternative rather than patching.
"""

# No ``from __future__ import annotations`` here: these dataclasses cross the Temporal boundary
# and the workflow sandbox cannot resolve string annotations such as ``Literal[...]``.
from dataclasses import dataclass, field
from typing import Literal, Protocol

from semspec.vocabulary.review import Severity, Verdict

DeveloperOutcome = Literal["submitted", "step_limit", "budget_exhausted", "failed"]


@dataclass(frozen=True)
class DeveloperRequest:
    """What the developer agent gets for one iteration."""

    task_id: str
    title: str
    description: str
    criteria: list[str]
    task_files: list[str]
    worktree: str
    iteration: int
    feedback: list[str] = field(default_factory=list)
    """Gate failures and review findings from the previous iteration, newest last."""
    guidance: str | None = None
    """What a human said when resolving an escalation with ``retry``."""
    context: str = ""
    """Assembled developer context (SOP requirements, decisions) as text."""


@dataclass(frozen=True)
class DeveloperResult:
    """What the developer agent did; files touched are read from git, not from the agent."""

    outcome: DeveloperOutcome
    summary: str = ""
    tokens_used: int = 0
    reason: str | None = None
    """A canonical fallback reason when the outcome is not ``submitted``."""


@dataclass(frozen=True)
class Finding:
    """One reviewer finding."""

    message: str
    severity: Severity = "error"
    file: str | None = None
    line: int | None = None
    sop_id: str | None = None
    criterion: str | None = None


@dataclass(frozen=True)
class NotedPattern:
    """A convention the reviewer saw and approves of, to be learned."""

    name: str
    description: str
    applies_to: str = "*"


@dataclass(frozen=True)
class ReviewRequest:
    """What the reviewer agent gets."""

    task_id: str
    title: str
    description: str
    criteria: list[str]
    task_files: list[str]
    diff: str
    iteration: int
    gate_summary: str = ""
    """Gate outcomes, including failed optional gates as warnings."""
    context: str = ""
    """Assembled reviewer context (SOPs, decisions, file summaries, conventions)."""
    flags: list[str] = field(default_factory=list)
    """Risk-monitor flags the reviewer must consider (e.g. scope creep)."""


@dataclass(frozen=True)
class ReviewVerdict:
    """The reviewer's schema-validated answer."""

    verdict: Verdict
    summary: str = ""
    findings: list[Finding] = field(default_factory=list)
    noted_patterns: list[NotedPattern] = field(default_factory=list)
    needed_evidence: list[str] = field(default_factory=list)
    reviewer: str = "reviewer"
    tokens_used: int = 0
    reason: str | None = None


class DeveloperAgent(Protocol):
    """Plays the developer role: edits files in ``request.worktree``."""

    async def develop(self, request: DeveloperRequest) -> DeveloperResult: ...

    async def aclose(self) -> None:
        """Release what the agent holds (a model's HTTP connections); called after each step."""


class ReviewerAgent(Protocol):
    """Plays the reviewer role: judges the diff against criteria and context."""

    async def review(self, request: ReviewRequest) -> ReviewVerdict: ...

    async def aclose(self) -> None:
        """Release what the agent holds (a model's HTTP connections); called after each review."""
