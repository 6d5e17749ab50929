"""What each loop event carries in ``data``, one model per kind of ``agent.monitor.<kind>``.

The task loop validates a payload before it publishes it and the risk monitor validates it
again on receipt (``semspec.vocabulary.events``). Every model forbids keys it does not name and
checks types strictly (``"4"`` is not a number), so the contract cannot drift silently: a new
field is added here first. ``docs/events.md`` is generated from these models.

``EscalationSource`` and ``Pressure`` are spelled again in the packages above this floor that
produce them (``workflow.task.messages``, ``workflow.context.monitor``); a test keeps the copies
equal. ``ResolutionAction`` has one home, ``vocabulary.resolution_actions``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, NonNegativeInt, Tag

from semspec.vocabulary.resolution_actions import ResolutionAction as ResolutionAction
from semspec.vocabulary.review import Verdict

Pressure = Literal["green", "yellow", "orange", "red", "critical"]
EscalationSource = Literal["loop", "halt", "pause"]
"""Who stopped the task: its own bound (``loop``) or a risk signal (``halt``, ``pause``)."""


class Payload(BaseModel):
    """Base of every payload: unknown keys and loosely typed values are errors."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True
    )


class IterationPayload(Payload):
    """A developer turn starts (``agent.monitor.iteration``)."""

    phase: Literal["developer"]
    """The step the iteration starts with."""
    retries: NonNegativeInt
    """Retries used since the last human answer."""
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Dollars the task spent before this iteration."""
    max_retries: NonNegativeInt | None = None
    """Retries allowed (None from a loop of before it was sent): the board shows ``1/3``."""
    unpriced_models: list[str] = []
    """Models that ran without a price so far: the board's cost names them."""


class GateRun(Payload):
    """One gate's result inside a ``gate`` event."""

    name: str
    """The gate's name in the config."""
    passed: bool
    """Whether its command exited 0 within its timeout."""
    required: bool
    """Whether a failure stops the change (an optional gate's failure is a warning)."""
    duration_ms: Annotated[float, Field(ge=0)]
    """How long it ran."""


class GatePayload(Payload):
    """The gates ran on the developer's change (``agent.monitor.gate``)."""

    results: list[GateRun]
    """One entry per configured gate: ``name``, ``passed``, ``required``, ``duration_ms``."""


class ReviewPayload(Payload):
    """The reviewer answered (``agent.monitor.review``)."""

    verdict: Verdict
    """The reviewer's answer; ``need_more_info`` asks for evidence once before deciding."""
    findings: NonNegativeInt
    """How many findings the reviewer listed."""
    flagged: bool
    """Whether risk flags (scope creep) were put before the reviewer."""


class ContextPayload(Payload):
    """Context use after an iteration (``agent.monitor.context``)."""

    iteration: NonNegativeInt
    """The iteration the sample was taken at."""
    tokens_used: NonNegativeInt
    """Tokens of the developer's context in that iteration."""
    window: Annotated[int, Field(gt=0)]
    """The model's context window in tokens."""
    utilization: Annotated[float, Field(ge=0)]
    """``tokens_used / window`` as a fraction (above 1 when the window overflowed)."""
    tokens_per_iteration: float | None
    """Average growth per iteration; ``null`` until two iterations were seen."""
    iterations_remaining: NonNegativeInt | None
    """Iterations that still fit at that growth; ``null`` when it is not positive."""
    pressure: Pressure
    """How full the context is; at ``red`` and ``critical`` the loop checkpoints."""


class FilesPayload(Payload):
    """What the developer's change touched (``agent.monitor.files``)."""

    files: list[str]
    """Every path the worktree diff against the base touches."""
    task_files: list[str]
    """The task's own files."""
    repo: str
    """The repository's identity (its root commit), so equal paths in unrelated repositories
    never look like a conflict."""
    out_of_scope: list[str]
    """Touched paths that are neither task files nor allowed by ``scope.allow``."""
    escaping_symlinks: list[str] = []
    """Touched paths that are symlinks whose target lies outside the worktree (the risk
    monitor's ``protected_path`` rule flags them)."""


class EscalationRaised(Payload):
    """The loop asks a human (``agent.monitor.escalation``); a ``user.signal.escalate`` follows."""

    reason: Annotated[str, Field(min_length=1)]
    """Reason code: a fallback reason, or the risk reason of the halt or pause that stopped it."""
    retries: NonNegativeInt
    """Retries used when the loop stopped."""
    fingerprint: str | None
    """The evidence fingerprint of the last attempt, when the loop compared attempts."""
    question: str
    """What the human is asked."""
    source: EscalationSource
    """The task's own bound (``loop``), or the risk signal that stopped it."""
    escalation_id: Annotated[str, Field(min_length=1)]
    """``<task id>-<n>``, counting the task's escalations."""
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Dollars the task had spent when it stopped."""
    max_retries: NonNegativeInt | None = None
    """Retries allowed (None from a loop of before it was sent)."""
    unpriced_models: list[str] = []
    """Models that ran without a price so far."""
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    """Its dollar budget with what humans added; null when it has none."""


class EscalationResolved(Payload):
    """A human answered an escalation (``agent.monitor.escalation`` with ``resolved: true``)."""

    resolved: Literal[True]
    """Always ``true``: what tells an answer from a question."""
    action: ResolutionAction
    """The human's answer; the monitor starts a new episode on any of them."""
    extra_retries: NonNegativeInt
    """Retries an ``extend_budget`` answer granted (0 for the other actions)."""
    extra_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Dollars an ``extend_budget`` answer added to the task's budget."""
    escalation_id: Annotated[str, Field(min_length=1)]
    """The escalation answered."""


def _escalation_tag(value: Any) -> str:
    """``resolved`` for an answer, ``raised`` for a question (dicts and models alike)."""
    if isinstance(value, dict):
        return "resolved" if "resolved" in value else "raised"
    return "resolved" if isinstance(value, EscalationResolved) else "raised"


EscalationPayload = Annotated[
    Annotated[EscalationRaised, Tag("raised")] | Annotated[EscalationResolved, Tag("resolved")],
    Discriminator(_escalation_tag),
]
"""A question to a human or the answer to one, told apart by the ``resolved`` key."""


class FinishedPayload(Payload):
    """The task ended (``agent.monitor.finished``); the monitor forgets its files."""

    outcome: Annotated[str, Field(min_length=1)]
    """``approved``, ``aborted``, ``failed``, ``refused`` or ``cancelled``."""
    commit: str | None
    """The approved commit, if any."""
    reason: str | None
    """Why it ended otherwise, if known."""
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Dollars the task's agents spent (models without a price count nothing)."""
    input_tokens: NonNegativeInt = 0
    """Prompt tokens of every agent call, cached ones included."""
    output_tokens: NonNegativeInt = 0
    """Completion tokens of every agent call."""
    cached_tokens: NonNegativeInt = 0
    """Prompt tokens read from the provider's cache (part of ``input_tokens``)."""
    unpriced_models: list[str] = []
    """Models that ran without a price in the registry."""


StepKind = Literal["model", "tool"]
AgentRole = Literal["developer", "reviewer"]


class StepPayload(Payload):
    """One model call or tool call inside an agent's turn (``agent.monitor.step``).

    Published by the develop and review activities as the step ends, so the monitor sees a loop
    inside one iteration. Hashes let the rules compare actions and observations without the
    text: equal hashes mean equal normalized arguments (or equal tool output).
    """

    role: AgentRole
    """Which agent took the step."""
    step: Annotated[int, Field(ge=1)]
    """The step's number within the agent's turn, from 1."""
    kind: StepKind
    """``model`` for a model call, ``tool`` for a tool call."""
    tool: str | None
    """The tool's name (tool steps only)."""
    action_hash: str
    """Hash of the tool name and its normalized arguments; for a model step, of the tool calls it
    asked for (empty string when it asked for none)."""
    observation_hash: str
    """Hash of what the step returned (the tool's output, or the model's text)."""
    error: bool
    """Whether the step failed (a tool error, a refused call, a provider error)."""
    error_kind: str | None = None
    """What kind of failure, when known: e.g. ``context_window`` for a prompt over the window."""
    wait: bool = False
    """The tool is a wait (polling is expected to repeat); the repetition rules skip it."""
    model: str | None = None
    """The model that answered (model steps)."""
    input_tokens: NonNegativeInt = 0
    """Prompt tokens the provider reported, cached ones included."""
    output_tokens: NonNegativeInt = 0
    """Completion tokens the provider reported."""
    cached_tokens: NonNegativeInt = 0
    """The part of ``input_tokens`` read from the provider's prompt cache."""
    cost_usd: Annotated[float, Field(ge=0)] | None = None
    """What the step cost in US dollars; ``null`` when the model's price is unknown."""
    duration_ms: Annotated[float, Field(ge=0)] = 0.0
    """How long the step took."""


EventPayload = (
    StepPayload
    | IterationPayload
    | GatePayload
    | ReviewPayload
    | ContextPayload
    | FilesPayload
    | EscalationRaised
    | EscalationResolved
    | FinishedPayload
)
"""Any loop event's payload."""
