"""What the demo reports at the end (``--json``): the stack, the sample, and each task's story."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workflow.task.shared import Escalation, TaskStatus


@dataclass
class EscalationRecord:
    """An escalation the demo saw, and how it was answered (None while it waits)."""

    escalation_id: str
    reason: str
    message: str
    iteration: int
    fingerprint: str | None
    resolution: str | None = None

    @classmethod
    def of(cls, esc: Escalation) -> EscalationRecord:
        """The record of a pending escalation as the status query reports it."""
        return cls(esc.escalation_id, esc.reason, esc.message, esc.iteration, esc.fingerprint)


@dataclass
class GateRecord:
    """One gate run: in which iteration, and whether it passed."""

    iteration: int
    name: str
    passed: bool
    required: bool


@dataclass
class TaskRecord:
    """One task of the demo: its final state, verdicts, gates, escalations and commit."""

    key: str
    task_id: str
    title: str
    state: str
    """``approved`` (or another outcome) once finished, ``escalated`` while waiting."""
    iterations: int = 0
    commit_id: str | None = None
    branch: str | None = None
    verdicts: list[str] = field(default_factory=list)
    gates: list[GateRecord] = field(default_factory=list)
    escalations: list[EscalationRecord] = field(default_factory=list)
    workflow_url: str | None = None

    def update_from(self, status: TaskStatus) -> None:
        """Copy state, counters, commit, verdicts and gate results from a task's status."""
        self.state = status.outcome or status.phase
        self.iterations = status.iteration
        self.commit_id = status.commit_id
        self.branch = status.branch
        self.verdicts = [e.message.split()[0] for e in status.log if e.kind == "review"]
        self.gates = [
            GateRecord(
                e.iteration,
                str(e.data.get("name", "")),
                bool(e.data.get("passed")),
                bool(e.data.get("required")),
            )
            for e in status.log
            if e.kind == "gate"
        ]


@dataclass
class DemoSummary:
    """Everything ``semspec demo --json`` prints."""

    ok: bool
    sample_repo: str
    kept: bool
    temporal_address: str
    namespace: str
    task_queue: str
    ui_url: str | None
    services: list[dict[str, Any]]
    tasks: list[TaskRecord]
    resolve_command: str | None = None
    """Set when the demo left an escalation for the user to answer (no ``--yes``)."""
