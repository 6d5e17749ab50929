"""A recorded run through the live rules: where each fired, and what stopping would have saved.

The run's events go through ``rules.apply_event`` one by one, the states carried from one to
the next exactly as the monitor's processor carries them. The live system stops an agent at its
next step after a ``pause`` or ``halt`` (or an ``escalate``, which is past both), so everything
after the step that raised the first of them is what the rules would have saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semspec.core.config.models import RiskConfig
from semspec.core.reasons import level_rank
from semspec.processors.risk_monitor.replay.runs import RecordedRun
from semspec.processors.risk_monitor.rules import apply_event, related_tasks
from semspec.processors.risk_monitor.state import FileIndex, TaskState

STOPPING = level_rank("pause")
"""Levels from here up stop the agent at its next step."""


@dataclass(frozen=True)
class Firing:
    """A rule that reached a level at a step of the run."""

    step: int
    """The step's position in the run, from 1."""
    event_id: str
    rule: str
    level: str


@dataclass
class RunReport:
    """What the rules did over one recorded run."""

    name: str
    format: str
    steps: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    firings: list[Firing] = field(default_factory=list)
    stopped_at: int | None = None
    """The step that raised the first pause or halt (the agent would take no step after it)."""
    tokens_saved: int = 0
    usd_saved: float | None = None
    dollars_from: str | None = None

    @property
    def first_rule(self) -> str | None:
        """The rule that fired first, or None for a run no rule fired on."""
        return self.firings[0].rule if self.firings else None

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``--json``)."""
        return {
            "run": self.name,
            "format": self.format,
            "steps": self.steps,
            "tokens": self.tokens,
            "cost_usd": _rounded(self.cost_usd),
            "firings": [vars(f) for f in self.firings],
            "stopped_at": self.stopped_at,
            "tokens_saved": self.tokens_saved,
            "usd_saved": _rounded(self.usd_saved),
            "dollars_from": self.dollars_from,
        }


def backtest(run: RecordedRun, risk: RiskConfig) -> RunReport:
    """Feed ``run`` through the rules and report where they fired and what stopping saved."""
    report = RunReport(run.name, run.format, dollars_from=run.dollars_from)
    states: dict[str, TaskState] = {}
    index = FileIndex()
    spent: list[tuple[int, float | None]] = []  # (tokens, dollars) per step
    for event in run.events:
        if event.kind == "step":
            data = event.data
            spent.append(
                (data.input_tokens + data.output_tokens, _dollars(data.kind, data.cost_usd))
            )
        related = related_tasks(event, index)
        result = apply_event(event, {t: states[t] for t in related if t in states}, index, risk)
        states.update(result.states)
        index = result.index
        for emission in result.emissions:
            signal = emission.signal
            report.firings.append(Firing(len(spent), event.event_id, signal.reason, signal.level))
            if report.stopped_at is None and level_rank(signal.level) >= STOPPING:
                report.stopped_at = len(spent)
    report.steps = len(spent)
    report.tokens = sum(tokens for tokens, _ in spent)
    report.cost_usd = _sum([usd for _, usd in spent])
    if report.stopped_at is not None:
        after = spent[report.stopped_at :]
        report.tokens_saved = sum(tokens for tokens, _ in after)
        report.usd_saved = _sum([usd for _, usd in after])
    elif report.cost_usd is not None:
        report.usd_saved = 0.0
    return report


def _dollars(kind: str, cost: float | None) -> float | None:
    """A step's dollars; a tool step costs nothing (only model calls are billed)."""
    return 0.0 if kind == "tool" and cost is None else cost


def _rounded(usd: float | None) -> float | None:
    """Dollars to six decimals (a ten-thousandth of a cent), without float noise."""
    return None if usd is None else round(usd, 6)


def _sum(costs: list[float | None]) -> float | None:
    """The total, or None when any step's cost is unknown."""
    known = [c for c in costs if c is not None]
    return sum(known) if len(known) == len(costs) else None
