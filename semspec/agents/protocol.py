"""The seam between the task loop and whatever plays the developer and reviewer roles.

The task loop's activities build a request, hand it to an agent, and get a typed result back.
Providers (scripted, OpenAI-compatible, Anthropic, an external CLI) implement these protocols,
so tests hand in a real alternative rather than patching.
"""

# No ``from __future__ import annotations`` here: these dataclasses cross the Temporal boundary
# and the workflow sandbox cannot resolve string annotations such as ``Literal[...]``.
from dataclasses import dataclass, field
from typing import Literal, Protocol

from semspec.agents.steps import StepObserver, StopReason
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
    cost_budget_usd: float | None = None
    """Dollars this turn may still spend (the task's and plan's budgets minus what they spent);
    None = no dollar budget. The agent stops before the step that would start beyond it."""
    accept_unpriced: bool = False
    """A human accepted running a model whose price is unknown; without it, a turn with a dollar
    budget and an unpriced model stops before its first call (``unknown_price``)."""


@dataclass(frozen=True)
class TurnUsage:
    """What one agent turn spent: tokens as the provider reported them, and dollars."""

    steps: int = 0
    """Model and tool calls taken."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    """Dollars of the steps whose price is known."""
    model: str | None = None
    """The model that answered."""
    unpriced: bool = False
    """Some step's cost could not be computed (the model has no price in the registry)."""
    peak_tokens: int = 0
    """The largest single model call (prompt + completion): how full the model's window got.
    Each call resends the conversation, so the sum of the calls overstates it; 0 = not known."""
    estimated: bool = False
    """Some tokens are an estimate: an agent CLI killed before it reported its counts."""


@dataclass(frozen=True)
class DeveloperResult:
    """What the developer agent did; files touched are read from git, not from the agent."""

    outcome: DeveloperOutcome
    summary: str = ""
    tokens_used: int = 0
    reason: str | None = None
    """A canonical fallback reason when the outcome is not ``submitted``."""
    usage: TurnUsage = field(default_factory=TurnUsage)
    """Steps, tokens and dollars of the turn."""
    stopped: StopReason | None = None
    """Why the turn stopped before its end, when its observer asked it to."""


@dataclass(frozen=True)
class Finding:
    """One reviewer finding."""

    message: str
    severity: Severity = "error"
    file: str | None = None
    line: int | None = None
    sop_id: str | None = None
    """The SOP or rule (its id: a rule file's path) the finding enforces, if one."""
    criterion: str | None = None
    section: str | None = None
    """The section (heading) of that SOP or rule."""
    citation: str | None = None
    """Set by semspec, not the reviewer: why the cited rule is suspect (it was not given to
    the reviewer, or no such rule applies to the task)."""


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
    cost_budget_usd: float | None = None
    """As ``DeveloperRequest.cost_budget_usd``."""
    accept_unpriced: bool = False
    """As ``DeveloperRequest.accept_unpriced``."""


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
    usage: TurnUsage = field(default_factory=TurnUsage)
    """Steps, tokens and dollars of the review."""
    stopped: StopReason | None = None
    """Why the review stopped before its verdict, when its observer asked it to."""


class DeveloperAgent(Protocol):
    """Plays the developer role: edits files in ``request.worktree``."""

    async def develop(
        self, request: DeveloperRequest, observer: StepObserver | None = None
    ) -> DeveloperResult:
        """One turn in ``request.worktree``; each step goes to ``observer``, which may stop it."""

    async def aclose(self) -> None:
        """Release what the agent holds (a model's HTTP connections); called after each step."""


class ReviewerAgent(Protocol):
    """Plays the reviewer role: judges the diff against criteria and context."""

    async def review(
        self, request: ReviewRequest, observer: StepObserver | None = None
    ) -> ReviewVerdict:
        """The verdict; each step goes to ``observer``, which may stop the review."""

    async def aclose(self) -> None:
        """Release what the agent holds (a model's HTTP connections); called after each review."""
