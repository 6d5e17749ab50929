"""Inputs and results of the task loop, shared by the workflow, activities and CLI.

Every workflow, activity, signal, update and query takes one dataclass and returns one, so
fields can be added later without breaking recorded histories. The workflow, signal, update and
query names and the workflow ids are in ``semspec.vocabulary.workflow_names``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from semspec.agents.protocol import Finding, TurnUsage
from semspec.core.owner_key import OwnerKey, digest
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.resolution_actions import ResolutionAction as ResolutionAction
from semspec.vocabulary.review import Verdict
from semspec.workflow.context.monitor import ContextSnapshot
from semspec.workflow.gates.types import GateResult, GateSpec
from semspec.workflow.task.usage import UsageTotals

Phase = Literal[
    "starting",
    "budget",
    "subtasks",
    "workspace",
    "developer",
    "gates",
    "reviewer",
    "committing",
    "checkpoint",
    "escalated",
    "paused",
    "finishing",
    "done",
]
"""Where a task is (``TaskStatus.phase``); ``paused`` only in statuses of older runs."""
EscalationSource = Literal["loop", "pause", "halt"]
"""Who asked a human: the task's own bounds, or the risk signal that stopped it."""

TASK_START = "semspec/task-start"
PLAN_START = "semspec/plan-start"
RESOLVE = "semspec/resolve-escalation"
"""Purposes of the owner's signatures (ADR 0004): a signature made for one never passes for
another."""


@dataclass(frozen=True)
class RoleSpec:
    """Who plays a role: provider, model id and, for scripted agents, the script path."""

    provider: str = "scripted"
    model: str = "scripted"
    script: str | None = None


@dataclass(frozen=True)
class LoopLimits:
    """Bounds of the loop, copied from the config at submit time."""

    max_retries: int = 3
    max_iterations: int = 12
    developer_timeout_s: float = 1800.0
    reviewer_timeout_s: float = 600.0
    activity_attempts: int = 5
    max_output_bytes: int = 16_384
    max_cost_usd: float | None = None
    """Dollars the task may spend (``loop.max_cost_usd``, or the task file's); None = no cap."""


@dataclass(frozen=True)
class TaskSpec:
    """A task as submitted: what to do, to which files, in which repository."""

    task_id: str
    title: str
    repo_path: str
    description: str = ""
    criteria: list[str] = field(default_factory=list)
    task_files: list[str] = field(default_factory=list)
    plan_id: str | None = None
    base_branch: str = "main"
    developer: RoleSpec = field(default_factory=RoleSpec)
    reviewer: RoleSpec = field(default_factory=RoleSpec)
    project: str = "project"
    workspace_id: str | None = None
    """Task whose worktree and branch this task works on (subtasks share their parent's)."""
    keep_checkpoints: bool = False
    """Keep ``semspec/checkpoint/<task>/<n>`` branches after the task ends."""
    after_commits: list[str] = field(default_factory=list)
    """Approved commits of the plan tasks this one depends on; its branch starts from them."""

    @property
    def workspace_key(self) -> str:
        """Id naming the worktree and the ``semspec/task/<id>`` branch."""
        return self.workspace_id or self.task_id


@dataclass(frozen=True)
class LogEntry:
    """One line of ``semspec task logs``."""

    iteration: int
    kind: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Continuation:
    """What a task carries into a fresh run after a checkpoint (continue-as-new)."""

    checkpoint_ref: str
    checkpoints: int
    iteration: int
    criteria: list[str]
    decisions: list[str] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    assignment: list[str] = field(default_factory=list)
    events_dropped: int = 0
    window: int = 0
    """The loop's context window (the developer's); 0 only in continuations of older runs."""
    base_tokens: int = 0
    checkpoint_refs: list[str] = field(default_factory=list)
    retries: int = 0
    """Retries used since the last human answer: a checkpoint does not reset the bound."""
    feedback: list[str] = field(default_factory=list)
    """The last gate failure or review findings, for the next developer step."""
    guidance: str | None = None
    """A human's retry guidance that no developer step has used yet."""
    tokens_spent: int = 0
    """Tokens of every run so far, for the performance record."""
    elapsed_s: float = 0.0
    """Seconds the earlier runs took, for the performance record."""
    max_retries: int | None = None
    """The retry bound with what a human granted (``extend_budget``); None = the limits'."""
    max_iterations: int | None = None
    """The iteration cap with what a human granted; None = the limits'."""
    escalations: int = 0
    """Escalations so far, so escalation ids stay unique when the carried log is cut."""
    signal_ids: list[str] = field(default_factory=list)
    """Risk signals already honoured, so a redelivery after the checkpoint is dropped."""
    halt: RiskSignalInput | None = None
    """A halt that arrived while the checkpoint was taken: the new run honours it first."""
    scope_flagged: list[str] = field(default_factory=list)
    """Files outside the task the loop already flagged to the reviewer."""
    outbox: list[PublishInput] = field(default_factory=list)
    """Loop events not yet published: the new run sends them first, under their old ids."""
    usage: UsageTotals | None = None
    """Tokens and dollars of every run so far; None only in continuations of older runs."""
    iteration_costs: list[float] = field(default_factory=list)
    """Dollars of each iteration so far (the first iteration's first)."""
    granted_usd: float = 0.0
    """Dollars humans added to the budget (``extend_budget`` with ``extra_usd``)."""
    accept_unpriced: bool = False
    """A human agreed to run a model without a price; the task does not ask again."""


@dataclass(frozen=True)
class TaskInput:
    """Input of ``TaskWorkflow``: the spec plus everything taken from the config at submit."""

    spec: TaskSpec
    gates: list[GateSpec]
    limits: LoopLimits = field(default_factory=LoopLimits)
    run_dir: str = ""
    continuation: Continuation | None = None
    check_budget: bool = True
    """Subtasks skip the budget check: their parent already split the files to fit."""
    window: int = 0
    """Context window the loop tracks when it skips the budget check (a subtask gets its
    parent's); 0 = from the budget check."""
    base_tokens: int = 0
    """Where the loop's context starts when it skips the budget check (task text and files)."""
    owner_key: str = ""
    """Public key of the stack's owner: only what it signed starts, answers or stops the task.
    Child tasks (subtasks, plan tasks) get their parent's."""
    start_signature: str = ""
    """The owner's signature over the workflow id and this input (``start_fields``)."""
    share_usd: float | None = None
    """Dollars of its parent's budget this task may spend: a plan task's share of the plan's
    ``max_cost_usd``, a subtask's of its parent task's budget; None = no such cap."""


class SignedInput(Protocol):
    """A workflow input a client signs (``TaskInput``, ``PlanInput``): a dataclass."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def owner_key(self) -> str: ...

    @property
    def start_signature(self) -> str: ...


S = TypeVar("S", bound=SignedInput)


def start_fields(workflow_id: str, inp: SignedInput) -> dict[str, str]:
    """What a start signature covers: the workflow id and a digest of the whole input except
    the signature itself (the owner's key included)."""
    body = asdict(inp)
    body.pop("start_signature", None)
    return {"workflow_id": workflow_id, "input": digest(body)}


def signed_start(owner: OwnerKey, purpose: str, workflow_id: str, inp: S) -> S:
    """``inp`` with the owner's key and its start signature filled in."""
    keyed = replace(inp, owner_key=owner.public_key, start_signature="")
    signature = owner.sign(purpose, start_fields(workflow_id, keyed))
    return replace(keyed, start_signature=signature)


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
    """End-of-task bookkeeping: knowledge, model performance, checkpoint cleanup."""

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


@dataclass(frozen=True)
class FinalizeStep:
    decision: str | None
    conventions: list[str]
    checkpoints_deleted: list[str]


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
class Escalation:
    """A question for a human; the workflow waits for ``resolve_escalation``."""

    escalation_id: str
    task_id: str
    reason: str
    message: str
    iteration: int
    retries: int
    fingerprint: str | None = None
    source: EscalationSource = "loop"
    """``loop`` for the task's own bounds, or the risk signal (``pause``/``halt``) that asked."""
    nonce: str = ""
    """Made when the question opens; the answer's signature covers it, so a signed answer to
    one question never answers another. Empty in runs from before signatures."""


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


@dataclass(frozen=True)
class Resolution:
    """A human's answer to an escalation (the ``resolve_escalation`` update's argument)."""

    action: ResolutionAction
    guidance: str | None = None
    extra_retries: int = 0
    resolved_by: str = "human"
    signature: str = ""
    """The owner's signature over ``signed_fields`` (made by ``signed_by``)."""
    extra_usd: float = 0.0
    """Dollars an ``extend_budget`` answer adds to the task's dollar budget."""

    def signed_fields(self, escalation: Escalation) -> dict[str, Any]:
        """What the signature covers: the answer and the one question it answers."""
        fields: dict[str, Any] = {
            "task_id": escalation.task_id,
            "escalation_id": escalation.escalation_id,
            "nonce": escalation.nonce,
            "action": self.action,
            "guidance": self.guidance,
            "extra_retries": self.extra_retries,
            "resolved_by": self.resolved_by,
        }
        # Covered whenever it grants something; left out at its default, so an answer signed
        # before the field existed still verifies.
        if self.extra_usd:
            fields["extra_usd"] = self.extra_usd
        return fields

    def signed_by(self, owner: OwnerKey, escalation: Escalation) -> Resolution:
        """This answer, signed by ``owner`` for ``escalation``."""
        return replace(self, signature=owner.sign(RESOLVE, self.signed_fields(escalation)))


@dataclass(frozen=True)
class ResolutionAck:
    escalation_id: str
    action: ResolutionAction
    accepted: bool = True


@dataclass
class TaskStatus:
    """What the ``status`` query returns."""

    task_id: str
    title: str
    phase: Phase
    iteration: int
    retries: int
    max_retries: int
    outcome: str | None = None
    reason: str | None = None
    commit_id: str | None = None
    branch: str | None = None
    last_gates: list[GateResult] = field(default_factory=list)
    last_verdict: ReviewStep | None = None
    pending_escalation: Escalation | None = None
    fingerprints: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    paused: bool = False
    halted: bool = False
    events_dropped: int = 0
    """Loop events refused as invalid (the outbox loses none to an outage)."""
    events_pending: int = 0
    """Loop events waiting in the outbox until NATS acknowledges them."""
    log: list[LogEntry] = field(default_factory=list)
    context: ContextSnapshot | None = None
    task_files: list[str] = field(default_factory=list)
    plan_id: str | None = None
    worktree: str | None = None
    base_commit: str | None = None
    checkpoints: list[str] = field(default_factory=list)
    assignment: list[str] = field(default_factory=list)
    """The model registry's suggestion per role, for information: ``models`` say what ran."""
    subtasks: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)
    """``provider:model`` that plays each role (developer, reviewer), from the task's spec."""
    refused: int = 0
    """Answers and risk signals refused for a missing or wrong owner signature. A refused
    answer leaves no trace in the history, so that part of the count restarts when a worker
    replays the task."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    """Steps, tokens and dollars the task's agents spent, in all and per model."""
    iteration_costs: list[float] = field(default_factory=list)
    """Dollars of each iteration (the first iteration's first)."""
    budget_usd: float | None = None
    """The task's dollar budget with what humans added; None = no dollar budget."""


@dataclass(frozen=True)
class TaskResult:
    """Result of ``TaskWorkflow``: how it ended and the commit, if any."""

    task_id: str
    outcome: str
    """``approved``, ``aborted`` or ``cancelled``."""
    reason: str | None
    commit_id: str | None
    iterations: int
    branch: str | None
    status: TaskStatus
