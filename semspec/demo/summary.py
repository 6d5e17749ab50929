"""What the demo reports at the end (``--json``): the stack, the sample, the SOPs, each task's
story and the four steps the demo set out to show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semspec.demo.knowledge import KnowledgeRecord
from semspec.workflow.task.messages import Escalation, LogEntry, TaskStatus

SCOPE_CREEP = "scope_creep"


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
class SopCitation:
    """A reviewer finding that names an SOP (its ``sop_id``), and the iteration it came in."""

    iteration: int
    sop_id: str
    message: str


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
    flags: list[str] = field(default_factory=list)
    """Risk-monitor flags the workflow holds (they go to every later reviewer call)."""
    reviews_after_flag: list[int] = field(default_factory=list)
    """Iterations whose reviewer call came after a scope-creep flag had been logged."""
    sop_citations: list[SopCitation] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    """The log's checkpoint lines: why, and the ``semspec/checkpoint/<id>/<n>`` branch."""
    resumed: int = 0
    """Fresh runs the task continued in after a checkpoint."""

    def update_from(self, status: TaskStatus) -> None:
        """Copy state, counters, commit, verdicts, gate results, flags and checkpoints from a
        task's status."""
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
        self.flags = list(status.flags)
        self.reviews_after_flag = _reviews_after_flag(status.log)
        self.checkpoints = [e.message for e in status.log if e.kind == "checkpoint"]
        self.resumed = len([e for e in status.log if e.kind == "resumed"])

    def note_citations(self, status: TaskStatus) -> list[SopCitation]:
        """Record the SOPs the latest verdict cites; return those not seen before.

        Only the latest verdict is in the status (and none right after a checkpoint), so this
        is called on every poll; the verdict belongs to the last review line of the log.
        """
        reviews = [e for e in status.log if e.kind == "review"]
        verdict = status.last_verdict
        if not reviews or verdict is None:
            return []
        new = []
        for finding in verdict.findings:
            if not finding.sop_id:
                continue
            citation = SopCitation(reviews[-1].iteration, finding.sop_id, finding.message)
            if citation not in self.sop_citations:
                self.sop_citations.append(citation)
                new.append(citation)
        return new


def is_scope_flag(entry: LogEntry) -> bool:
    """A log line of the risk monitor's scope-creep flag reaching the workflow."""
    return (
        entry.kind == "signal" and entry.message.startswith("flag") and SCOPE_CREEP in entry.message
    )


def _reviews_after_flag(log: list[LogEntry]) -> list[int]:
    flagged = False
    iterations = []
    for entry in log:
        flagged = flagged or is_scope_flag(entry)
        if flagged and entry.kind == "review":
            iterations.append(entry.iteration)
    return iterations


@dataclass
class StepRecord:
    """One of the four things the demo shows, whether the run showed it, and how."""

    number: int
    name: str
    title: str
    shown: bool = False
    task: str | None = None
    """Key of the task that showed it (``sub`` or ``mul``); None for the SOP sync itself."""
    detail: str = ""


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
    knowledge: KnowledgeRecord
    steps: list[StepRecord]
    resolve_command: str | None = None
    """Set when the demo left an escalation for the user to answer (no ``--yes``)."""
    console_url: str | None = None
    """The web console's URL with the stack's secret, when ``up`` started it."""
