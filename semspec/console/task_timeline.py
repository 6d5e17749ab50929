"""A task's timeline for its console page, read from its status alone (one query).

The task loop's log holds every step in order (``TaskStatus.log``): the budget check, each
developer turn, each gate with the path of its full log, each review with its findings and what
its assembled context held, risk signals, checkpoints, escalations and the answers to them. This
module groups those entries by iteration and gives each kind the fields its page section shows;
it reads no file and makes no other round trip, so a task of 50 iterations costs what its status
costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from semspec.vocabulary.subjects import SIGNAL_LEVELS
from semspec.workflow.gates.types import GateResult
from semspec.workflow.task.loop.state import LOG_TIME_KEY
from semspec.workflow.task.messages import (
    ContextItem,
    LogEntry,
    ReviewContextUse,
    RuleUse,
    TaskStatus,
)

RISK_KINDS = frozenset({"signal", "flag", "cancelled", "refused"})
"""Log kinds that say the risk monitor (or the loop's own check) stepped in."""


@dataclass(frozen=True)
class GateLink:
    """A gate run in the timeline; ``index`` is its place among its iteration's gate runs,
    the key of its full log's address (``/tasks/{id}/gates/{iteration}/{index}/log``)."""

    name: str
    passed: bool
    required: bool
    index: int
    has_log: bool


@dataclass(frozen=True)
class Entry:
    """One line of the timeline, with what its kind adds."""

    kind: str
    message: str
    risk: bool = False
    gate: GateLink | None = None
    findings: list[str] = field(default_factory=list)
    context: ReviewContextUse | None = None
    lines: list[str] = field(default_factory=list)
    """The budget check's report lines."""
    level: str = ""
    """For a risk entry, how serious: a signal level (``warn``, ``pause``, ``halt``,
    ``escalate``), or ``refused`` for input refused for lack of the owner's signature."""
    at: str = ""
    """When the loop wrote it (ISO 8601); empty for entries of tasks run before it did."""


@dataclass(frozen=True)
class Iteration:
    """The timeline entries of one iteration (0: before the first developer turn)."""

    number: int
    entries: list[Entry]


@dataclass(frozen=True)
class LatestGate:
    """A gate of the latest run, with its bounded output, and where its full log is served."""

    result: GateResult
    iteration: int
    index: int


@dataclass(frozen=True)
class Timeline:
    """A task's log grouped by iteration, and the latest review's context and gate run."""

    iterations: list[Iteration]
    last_context: ReviewContextUse | None
    last_gates: list[LatestGate]


def timeline(status: TaskStatus) -> Timeline:
    """The task's log as its page shows it."""
    groups: dict[int, list[Entry]] = {}
    gate_counts: dict[int, int] = {}
    last_context: ReviewContextUse | None = None
    for entry in status.log:
        item = _entry(entry, gate_counts)
        if item.context is not None:
            last_context = item.context
        groups.setdefault(entry.iteration, []).append(item)
    iterations = [Iteration(number, entries) for number, entries in sorted(groups.items())]
    return Timeline(iterations, last_context, latest_gates(status))


def latest_gates(status: TaskStatus) -> list[LatestGate]:
    """The latest gate results, each with the iteration and position its full log is under."""
    # They are the last gate entries of the last iteration that ran gates.
    ran = [e.iteration for e in status.log if e.kind == "gate"]
    iteration = ran[-1] if ran else status.iteration
    first = max(ran.count(iteration) - len(status.last_gates), 0)
    return [LatestGate(r, iteration, first + i) for i, r in enumerate(status.last_gates)]


def gate_log_path(status: TaskStatus, iteration: int, index: int) -> str | None:
    """The full log the task's records name for the ``index``-th gate run of ``iteration``.

    The gate entries of the log name it; runs from before they did fall back to the latest
    gate results, which name theirs, for the latest iteration only.
    """
    runs = [e for e in status.log if e.kind == "gate" and e.iteration == iteration]
    if 0 <= index < len(runs):
        named = runs[index].data.get("log")
        if isinstance(named, str) and named:
            return named
    latest = [e.iteration for e in status.log if e.kind == "gate"]
    if latest and iteration == latest[-1] and 0 <= index < len(status.last_gates):
        return status.last_gates[index].log_path or None
    return None


def _entry(entry: LogEntry, gate_counts: dict[int, int]) -> Entry:
    data = entry.data if isinstance(entry.data, Mapping) else {}
    at = data.get(LOG_TIME_KEY)
    item = _entry_of_kind(entry, data, gate_counts)
    return replace(item, at=at) if isinstance(at, str) else item


def _entry_of_kind(entry: LogEntry, data: Mapping[str, Any], gate_counts: dict[int, int]) -> Entry:
    risk = entry.kind in RISK_KINDS
    if entry.kind == "gate":
        index = gate_counts.get(entry.iteration, 0)
        gate_counts[entry.iteration] = index + 1
        gate = GateLink(
            name=str(data.get("name", "")),
            passed=bool(data.get("passed")),
            required=bool(data.get("required", True)),
            index=index,
            has_log=bool(data.get("log")),
        )
        return Entry(entry.kind, entry.message, gate=gate)
    if entry.kind == "review":
        findings = [str(f) for f in _list(data.get("findings"))]
        return Entry(entry.kind, entry.message, findings=findings, context=_context(data))
    if entry.kind == "budget":
        return Entry(entry.kind, entry.message, lines=[str(x) for x in _list(data.get("lines"))])
    return Entry(entry.kind, entry.message, risk=risk, level=risk_level(entry) if risk else "")


def risk_level(entry: LogEntry) -> str:
    """The level of a risk entry, read from its line: a signal is logged as ``KIND: ...`` or
    ``KIND (LEVEL): ...`` (``RiskSignals.receive``), a cancelled step names the level that
    stopped it, and the loop's own scope note is a warning."""
    if entry.kind == "refused":
        return "refused"
    if entry.kind == "flag":
        return "warn"
    head = entry.message.split(":", 1)[0]
    words = head.replace("(", " ").replace(")", " ").split()
    if entry.kind == "cancelled":
        words = entry.message.replace(":", " ").split()
    found = [w for w in words if w in SIGNAL_LEVELS]
    # ``flag (warn)``: the level in brackets is the news; a flag sent as itself is a warning.
    if found:
        return found[-1]
    return "warn"


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _context(data: Mapping[str, Any]) -> ReviewContextUse | None:
    """The review's recorded context; None for reviews from before it was recorded."""
    raw = data.get("context")
    if not isinstance(raw, Mapping):
        return None
    items = [
        ContextItem(
            section=str(i.get("section", "")),
            label=str(i.get("label", "")),
            tokens=_int(i.get("tokens")),
            trimmed=bool(i.get("trimmed")),
        )
        for i in _list(raw.get("items"))
        if isinstance(i, Mapping)
    ]
    rules = [
        RuleUse(
            rule_id=str(r.get("rule_id", "")),
            origin=str(r.get("origin", "")),
            path=str(r.get("path", "")),
            severity=str(r.get("severity", "")),
            given=str(r.get("given", "")),
            sections_given=_int(r.get("sections_given")),
            sections_total=_int(r.get("sections_total")),
        )
        for r in _list(raw.get("rules"))
        if isinstance(r, Mapping)
    ]
    commit = raw.get("rules_commit")
    return ReviewContextUse(
        budget_tokens=_int(raw.get("budget_tokens")),
        used_tokens=_int(raw.get("used_tokens")),
        items=items,
        dropped=[str(d) for d in _list(raw.get("dropped"))],
        unlisted=_int(raw.get("unlisted")),
        rules=rules,
        rules_commit=commit if isinstance(commit, str) else None,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
