"""Inputs and results of the task loop's activities (one dataclass each way per activity).

``TaskWorkflow`` sends these to the activities in ``activities``, ``context_activities`` and
``owner_check`` and gets them back; ``messages`` re-exports every name, so callers import from
either. New fields get defaults, so recorded histories still decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semspec.agents.protocol import Finding, TurnUsage
from semspec.vocabulary.review import Verdict
from semspec.workflow.context.monitor import ContextSnapshot
from semspec.workflow.gates.types import GateResult, GateSpec
from semspec.workflow.task.task_spec import TaskSpec


@dataclass(frozen=True)
class OwnerCheckInput:
    """Whether the worker serves the owner who started this task."""

    task_id: str
    owner_key: str
    purpose: str = ""
    """What the start signature was made for (``TASK_START``); empty in runs from before."""
    start: dict[str, str] = field(default_factory=dict)
    """What it covers (``start_fields`` of the run's workflow id and input)."""
    signature: str = ""
    """The run's start signature."""


@dataclass(frozen=True)
class BudgetInput:
    spec: TaskSpec


@dataclass(frozen=True)
class BudgetOutcome:
    """The pre-flight budget check: fits, split into groups, or refused."""

    fits: bool
    window: int
    lines: list[str]
    groups: list[list[str]] = field(default_factory=list)
    refusal: str | None = None
    assignment: list[str] = field(default_factory=list)
    base_tokens: int = 0
    """Tokens of the task text and system prompt: where the loop's context starts."""
    file_tokens: dict[str, int] = field(default_factory=dict)
    """Tokens of each task file (part of ``base_tokens``), so subtasks know their share."""


@dataclass(frozen=True)
class CheckpointInput:
    spec: TaskSpec
    workspace: Workspace
    number: int
    commit_key: str
    changed: list[str] = field(default_factory=list)
    """Paths the last developer step's diff named (relative to the base commit)."""
    scan: bool = False
    """Also look for changed paths in the worktree: a step was cancelled before it reported."""


@dataclass(frozen=True)
class CheckpointStep:
    ref: str
    commit_id: str
    decisions: list[str]


@dataclass(frozen=True)
class FinalizeInput:
    """End-of-task bookkeeping: knowledge, model performance, worktree and checkpoint cleanup."""

    spec: TaskSpec
    outcome: str
    iterations: int
    tokens: int
    latency_s: float
    review_summary: str = ""
    noted_patterns: list[dict[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commit_id: str | None = None
    reviewer: str = ""
    run_dir: str = ""
    """The run folder whose ``worktrees/`` holds the task's worktree (``TaskInput.run_dir``)."""


@dataclass(frozen=True)
class FinalizeStep:
    decision: str | None
    conventions: list[str]
    checkpoints_deleted: list[str]
    worktree_removed: str = ""
    """The path of the task's worktree, removed because the task ended; empty: none removed."""


@dataclass(frozen=True)
class WorkspaceInput:
    task_id: str
    repo_path: str
    base_branch: str
    run_dir: str
    after_commits: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Workspace:
    """The task's worktree and branch."""

    path: str
    branch: str
    base_commit: str


@dataclass(frozen=True)
class EventContext:
    """What every published event carries, so activities can derive stable event ids."""

    task_id: str
    plan_id: str | None
    workflow_id: str
    run_id: str
    iteration: int


@dataclass(frozen=True)
class DeveloperInput:
    spec: TaskSpec
    workspace: Workspace
    events: EventContext
    feedback: list[str] = field(default_factory=list)
    guidance: str | None = None
    retries: int = 0
    carried: list[str] = field(default_factory=list)
    """Decisions carried over a checkpoint, re-injected with the SOP requirements."""
    cost_budget_usd: float | None = None
    """Dollars the turn may still spend (task and plan budgets); None = no dollar budget."""
    accept_unpriced: bool = False
    """A human accepted a model without a price for this task."""


STEP_CANCELLED = "cancelled"
"""``DeveloperStep.stopped`` / ``ReviewStep.stopped`` of a turn the workflow cancelled (a halt or
pause): the step returns what its agent spent so far instead of losing it with the turn."""
INTERRUPTED_STOPS = ("halt", "pause", STEP_CANCELLED)
"""``stopped`` values of a turn a halt or pause ended (through NATS, or the workflow's cancel)."""


@dataclass(frozen=True)
class DeveloperStep:
    """Result of one developer activity: the agent's outcome plus what git saw."""

    outcome: str
    summary: str
    tokens_used: int
    reason: str | None
    files_touched: list[str]
    diff_hash: str
    insertions: int
    deletions: int
    out_of_scope: list[str] = field(default_factory=list)
    events_dropped: int = 0
    events: list[PublishInput] = field(default_factory=list)
    """Its loop events, validated, for the workflow's outbox."""
    usage: TurnUsage = field(default_factory=TurnUsage)
    """Steps, tokens and dollars of the turn."""
    stopped: str | None = None
    """Why the agent stopped before its end (``StopReason``), when it was asked to."""
    tree: str = ""
    """The worktree after the turn as a git tree id (``iteration_tree``); empty when none was
    written: the task page diffs each iteration's tree against the one before."""


@dataclass(frozen=True)
class GatesInput:
    workspace: Workspace
    gates: list[GateSpec]
    events: EventContext
    max_output_bytes: int = 16_384
    log_dir: str = ""
    context: ContextSnapshot | None = None
    """The loop's context use after this iteration's developer step, published for the monitor."""
    repo_path: str = ""
    """The repository; its config says how gates are fenced (``gates.sandbox``, ``gates.env``)."""
    run_dir: str = ""
    """The stack's run folder, hidden from fenced gates."""


@dataclass(frozen=True)
class GatesStep:
    results: list[GateResult]
    passed: bool
    feedback: str
    summary: str
    events_dropped: int = 0
    events: list[PublishInput] = field(default_factory=list)
    """Its loop events, validated, for the workflow's outbox."""


@dataclass(frozen=True)
class ReviewInput:
    spec: TaskSpec
    workspace: Workspace
    events: EventContext
    gate_summary: str
    flags: list[str] = field(default_factory=list)
    evidence: str = ""
    cost_budget_usd: float | None = None
    """As ``DeveloperInput.cost_budget_usd``."""
    accept_unpriced: bool = False
    """As ``DeveloperInput.accept_unpriced``."""


@dataclass(frozen=True)
class ContextItem:
    """One SOP, decision, file summary or convention the reviewer's context held."""

    section: str
    """``sops``, ``decisions``, ``file_summaries`` or ``conventions``."""
    label: str
    """The SOP id, ``task: title`` of a decision, the file, or ``project/name``."""
    tokens: int
    """Tokens it took of the context budget."""
    trimmed: bool = False
    """Only part of it fitted."""


@dataclass(frozen=True)
class RuleUse:
    """How much of one SOP or rule the reviewer was given (``review context`` shows the same)."""

    rule_id: str
    origin: str
    """``sop``, or the rule-file kind (``agents_md``, ``claude_md``, ``cursor_rules``,
    ``copilot``)."""
    path: str
    severity: str
    given: str
    """``full``, ``cut`` or ``left_out`` (for the budget)."""
    sections_given: int = 0
    sections_total: int = 0


@dataclass(frozen=True)
class ReviewContextUse:
    """What the reviewer's assembled context held, so a reader can see what it was shown."""

    budget_tokens: int
    used_tokens: int
    items: list[ContextItem] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    """``section: label`` of each item the budget left out."""
    unlisted: int = 0
    """Items and left-out items beyond those listed: each review's record stays small."""
    rules: list[RuleUse] = field(default_factory=list)
    """Every SOP and rule that applied to the task files: given in full, cut or left out."""
    rules_commit: str | None = None
    """The base commit the rule files were read from; None when read from the graph."""


@dataclass(frozen=True)
class ReviewStep:
    """The reviewer's verdict as the workflow records it."""

    verdict: Verdict
    summary: str
    findings: list[Finding]
    reviewer: str
    reason: str | None = None
    needed_evidence: list[str] = field(default_factory=list)
    noted_patterns: list[dict[str, str]] = field(default_factory=list)
    tokens_used: int = 0
    events_dropped: int = 0
    events: list[PublishInput] = field(default_factory=list)
    """Its loop events, validated, for the workflow's outbox."""
    usage: TurnUsage = field(default_factory=TurnUsage)
    """Steps, tokens and dollars of the review."""
    stopped: str | None = None
    """As ``DeveloperStep.stopped``."""
    context: ReviewContextUse | None = None
    """What its assembled context held; None without a graph or in runs from before."""


@dataclass(frozen=True)
class EnrichInput:
    spec: TaskSpec
    workspace: Workspace
    needed_evidence: list[str]
    gate_logs: list[str]


@dataclass(frozen=True)
class Enrichment:
    """Extra evidence for a reviewer that asked for more information."""

    text: str
    fingerprint: str
    kinds: list[str]


@dataclass(frozen=True)
class CommitInput:
    spec: TaskSpec
    workspace: Workspace
    events: EventContext
    reviewer: str
    approved_by: str
    commit_key: str


@dataclass(frozen=True)
class CommitStep:
    commit_id: str
    created: bool


@dataclass(frozen=True)
class PublishInput:
    """A loop event (and optionally a user signal) to publish on NATS."""

    events: EventContext
    kind: str
    data: dict[str, Any]
    signal_level: str | None = None
    signal_reason: str | None = None
    signal_message: str = ""
    at: str = ""
    """When the loop recorded the event (ISO 8601, UTC); empty: when it is published."""


@dataclass(frozen=True)
class PublishBatch:
    """The first events of a task's outbox, to publish in this order."""

    events: list[PublishInput]


@dataclass(frozen=True)
class PublishedBatch:
    """How many of a ``PublishBatch``'s events (from the first) are done with."""

    sent: int
    """Acknowledged by NATS, or refused: the workflow takes them off its outbox."""
    refused: int = 0
    """Events or signals among them that failed validation and were not published."""
