"""Inputs and results of the task loop, shared by the workflow, activities and CLI.

Every workflow, activity, signal, update and query takes one dataclass and returns one, so
fields can be added later without breaking recorded histories. The workflow, signal, update and
query names and the workflow ids are in ``semspec.vocabulary.workflow_names``. The task's spec is
in ``task_spec`` and the activities' inputs and results in ``step_messages``; both are
re-exported here, so this stays the one module to import them from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from semspec.core.owner_key import OwnerKey, digest
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.resolution_actions import ResolutionAction
from semspec.workflow.context.monitor import ContextSnapshot
from semspec.workflow.gates.types import GateResult, GateSpec
from semspec.workflow.task.step_messages import (
    INTERRUPTED_STOPS,
    STEP_CANCELLED,
    BudgetInput,
    BudgetOutcome,
    CheckpointInput,
    CheckpointStep,
    CommitInput,
    CommitStep,
    ContextItem,
    DeveloperInput,
    DeveloperStep,
    EnrichInput,
    Enrichment,
    EventContext,
    FinalizeInput,
    FinalizeStep,
    GatesInput,
    GatesStep,
    OwnerCheckInput,
    PublishBatch,
    PublishedBatch,
    PublishInput,
    ReviewContextUse,
    ReviewInput,
    ReviewStep,
    RuleUse,
    Workspace,
    WorkspaceInput,
)
from semspec.workflow.task.task_spec import LoopLimits, RoleSpec, TaskSpec
from semspec.workflow.task.usage import UsageTotals

# The activities' messages and the spec live in their own modules; importers keep one path.
__all__ = [
    "INTERRUPTED_STOPS",
    "PLAN_START",
    "RESOLVE",
    "STEP_CANCELLED",
    "TASK_START",
    "BudgetInput",
    "BudgetOutcome",
    "CheckpointInput",
    "CheckpointStep",
    "CommitInput",
    "CommitStep",
    "ContextItem",
    "Continuation",
    "DeveloperInput",
    "DeveloperStep",
    "EnrichInput",
    "Enrichment",
    "Escalation",
    "EscalationSource",
    "EventContext",
    "FinalizeInput",
    "FinalizeStep",
    "GatesInput",
    "GatesStep",
    "LogEntry",
    "LoopLimits",
    "OwnerCheckInput",
    "Phase",
    "PublishBatch",
    "PublishInput",
    "PublishedBatch",
    "Resolution",
    "ResolutionAck",
    "ResolutionAction",
    "ReviewContextUse",
    "ReviewInput",
    "ReviewStep",
    "RoleSpec",
    "RuleUse",
    "SignedInput",
    "TaskInput",
    "TaskResult",
    "TaskSpec",
    "TaskStatus",
    "Workspace",
    "WorkspaceInput",
    "signed_start",
    "start_fields",
]

Phase = Literal[
    "starting",
    "budget",
    "waiting",
    "subtasks",
    "workspace",
    "developer",
    "gates",
    "reviewer",
    "committing",
    "landing",
    "checkpoint",
    "escalated",
    "paused",
    "finishing",
    "done",
]
"""Where a task is (``TaskStatus.phase``); ``paused`` only in statuses of older runs;
``waiting`` while earlier tasks on the same files finish and land (``loop/waiting.py``)."""
EscalationSource = Literal["loop", "pause", "halt"]
"""Who asked a human: the task's own bounds, or the risk signal that stopped it."""

TASK_START = "semspec/task-start"
PLAN_START = "semspec/plan-start"
RESOLVE = "semspec/resolve-escalation"
"""Purposes of the owner's signatures (ADR 0004): a signature made for one never passes for
another."""


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
    wait_for: list[str] = field(default_factory=list)
    """Ids of tasks submitted before this one whose declared files overlap its own: it waits
    until each has finished and, when approved, landed, before its workspace is made
    (docs/landing.md, "Waiting for overlapping tasks"). Chosen at submit (``task_claims``)."""


class SignedInput(Protocol):
    """A workflow input a client signs (``TaskInput``, ``PlanInput``): a dataclass."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def owner_key(self) -> str: ...

    @property
    def start_signature(self) -> str: ...


S = TypeVar("S", bound=SignedInput)


LATER_FIELDS = frozenset({"wait_for", "auto_land", "keep_worktree"})
"""Input fields added after inputs were first signed: covered when set, left out when empty, so
an input signed (and a history recorded) before the field existed still verifies."""


def start_fields(workflow_id: str, inp: SignedInput) -> dict[str, str]:
    """What a start signature covers: the workflow id and a digest of the whole input except
    the signature itself (the owner's key included)."""
    body = _without_unset(asdict(inp))
    body.pop("start_signature", None)
    return {"workflow_id": workflow_id, "input": digest(body)}


def _without_unset(value: Any) -> Any:
    """``value`` with every empty ``LATER_FIELDS`` entry left out, at any depth (a plan's
    input holds its tasks' inputs)."""
    if isinstance(value, dict):
        return {
            key: _without_unset(item)
            for key, item in value.items()
            if not (key in LATER_FIELDS and not item)
        }
    if isinstance(value, list):
        return [_without_unset(item) for item in value]
    return value


def signed_start(owner: OwnerKey, purpose: str, workflow_id: str, inp: S) -> S:
    """``inp`` with the owner's key and its start signature filled in."""
    keyed = replace(inp, owner_key=owner.public_key, start_signature="")
    signature = owner.sign(purpose, start_fields(workflow_id, keyed))
    return replace(keyed, start_signature=signature)


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
    land: dict[str, str] | None = None
    """Where a task that lands itself (``auto_land``) is on its way to the base, in the shape of
    ``land_client.land_state``: ``{"state": "queued"}``, ``{"state": "landed", "commit": ...}``
    or ``{"state": "land failed", "reason": ..., "message": ...}``; None = not landing itself."""
    waiting_on: list[str] = field(default_factory=list)
    """Tasks on overlapping files this one still waits for (phase ``waiting``): each must
    finish and, when approved, land first. Empty once it goes on."""


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
