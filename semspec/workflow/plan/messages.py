"""Inputs, results and task states of the plan workflow, shared by the workflow, CLI and tests.

One dataclass in and one out per workflow and query, so fields can be added later without
breaking recorded histories. The workflow and query names and the plan's workflow id are in
``semspec.vocabulary.workflow_names``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semspec.workflow.task.messages import TaskInput
from semspec.workflow.task.usage import UsageTotals

WAITING = "waiting"
RUNNING = "running"
APPROVED = "approved"
SKIPPED = "skipped"
FAILED = "failed"
CANCELLED = "cancelled"
FINAL_STATES: tuple[str, ...] = (APPROVED, "aborted", FAILED, CANCELLED, SKIPPED)
"""States a plan task never leaves; ``aborted`` is a human's answer to an escalation."""


@dataclass(frozen=True)
class PlanTask:
    """One task of a plan: its validated task-workflow input and the task ids it waits for."""

    input: TaskInput
    depends_on: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PlanInput:
    """Input of ``PlanWorkflow``; ``tasks`` are in an order where dependencies come first."""

    plan_id: str
    title: str
    tasks: list[PlanTask]
    description: str = ""
    owner_key: str = ""
    """Public key of the stack's owner; every task of the plan runs under it (ADR 0004)."""
    start_signature: str = ""
    """The owner's signature over the workflow id and this input (``start_fields``)."""
    max_cost_usd: float | None = None
    """Dollars the plan's tasks may spend together; None = no plan budget."""


@dataclass
class PlanTaskStatus:
    """Where one task of the plan stands."""

    task_id: str
    title: str
    depends_on: list[str] = field(default_factory=list)
    state: str = WAITING
    """``waiting``, ``running``, or one of ``FINAL_STATES``."""
    reason: str | None = None
    """Why the task ended other than approved; for a task waiting for a human, filled in by
    clients, the reason it escalated."""
    commit_id: str | None = None
    branch: str | None = None
    iterations: int = 0
    phase: str | None = None
    """The running task's own phase (e.g. ``escalated``); filled in by clients, not the plan."""
    share_usd: float | None = None
    """The share of the plan's budget the task got when it started; None = no plan budget."""
    cost_usd: float = 0.0
    """Dollars the task spent (known once it has finished)."""


@dataclass(frozen=True)
class PlanLogEntry:
    """One step of the plan: a task started, finished or was skipped, in the order it happened."""

    kind: str
    task_id: str
    state: str
    message: str = ""


@dataclass
class PlanStatus:
    """What the ``status`` query returns."""

    plan_id: str
    title: str
    state: str = RUNNING
    """``running`` until every task is in a final state, then ``done``."""
    outcome: str | None = None
    """``approved`` when every task was approved, else ``incomplete``; set when done."""
    tasks: list[PlanTaskStatus] = field(default_factory=list)
    log: list[PlanLogEntry] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)
    """Steps, tokens and dollars of the plan's finished tasks, summed."""
    max_cost_usd: float | None = None
    """The plan's dollar budget; None = none."""


@dataclass(frozen=True)
class PlanResult:
    """Result of ``PlanWorkflow``: the outcome and every task's final state."""

    plan_id: str
    outcome: str
    status: PlanStatus
