"""Precision and recall of the rules over a labelled corpus of recorded runs.

A run's label is the rule that should fire first on it, or ``healthy``. A run counts for the
rule that fired first on it (or as healthy when none did), so a stuck run caught by the wrong
rule is a miss for its own rule and a false alarm for the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

HEALTHY = "healthy"


@dataclass(frozen=True)
class Score:
    """Counts and ratios of one rule (or of all of them together)."""

    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        stuck = self.true_positives + self.false_negatives
        return self.true_positives / stuck if stuck else 1.0


def rule_scores(
    labels: Mapping[str, str], first_rules: Mapping[str, str | None]
) -> dict[str, Score]:
    """Per rule, and under ``all`` for every stuck label together, from each run's label and
    the rule that fired first on it (``None``: no rule fired)."""
    pairs = [(label, first_rules.get(run) or HEALTHY) for run, label in labels.items()]
    rules = sorted({r for pair in pairs for r in pair} - {HEALTHY})
    scores = {rule: _score(pairs, rule) for rule in rules}
    scores["all"] = Score(
        true_positives=sum(s.true_positives for s in scores.values()),
        false_positives=sum(s.false_positives for s in scores.values()),
        false_negatives=sum(s.false_negatives for s in scores.values()),
    )
    return scores


def _score(pairs: list[tuple[str, str]], rule: str) -> Score:
    return Score(
        true_positives=sum(1 for want, got in pairs if want == rule and got == rule),
        false_positives=sum(1 for want, got in pairs if want != rule and got == rule),
        false_negatives=sum(1 for want, got in pairs if want == rule and got != rule),
    )


STOP_TOLERANCE = 2
"""Steps a stop may lie before or after the step a stuck run's label names."""


@dataclass(frozen=True)
class StopLabel:
    """A recorded run read by a person: healthy, or stuck from a step, and why."""

    stuck: bool
    step: int | None
    reason: str


@dataclass(frozen=True)
class StopScore:
    """How the rules' stops match a labelled corpus of real runs."""

    healthy: int
    false_stops: list[str]
    """Healthy runs the rules stopped."""
    stuck: int
    caught: list[str]
    """Stuck runs stopped within ``STOP_TOLERANCE`` steps of their label."""
    missed: list[str]

    @property
    def false_stop_rate(self) -> float:
        return len(self.false_stops) / self.healthy if self.healthy else 0.0

    @property
    def recall(self) -> float:
        return len(self.caught) / self.stuck if self.stuck else 1.0


def read_stop_labels(raw: Mapping[str, object]) -> dict[str, StopLabel]:
    """``labels.json`` of a real corpus: per file ``{label: healthy|stuck, step, reason}``."""
    labels = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or entry.get("label") not in (HEALTHY, "stuck"):
            raise ValueError(f"{name}: expected {{label: healthy|stuck, step, reason}}")
        step = entry.get("step")
        stuck = entry["label"] == "stuck"
        if stuck and not isinstance(step, int):
            raise ValueError(f"{name}: a stuck run names the step it went wrong at")
        labels[name] = StopLabel(stuck, step if stuck else None, str(entry.get("reason", "")))
    return labels


def stop_scores(labels: Mapping[str, StopLabel], stopped_at: Mapping[str, int | None]) -> StopScore:
    """Stops against labels: healthy runs stopped, stuck runs stopped near their step."""
    false_stops, caught, missed = [], [], []
    for name, label in sorted(labels.items()):
        stop = stopped_at.get(name)
        if not label.stuck:
            if stop is not None:
                false_stops.append(name)
        elif (
            stop is not None and label.step is not None and abs(stop - label.step) <= STOP_TOLERANCE
        ):
            caught.append(name)
        else:
            missed.append(name)
    stuck = sum(1 for label in labels.values() if label.stuck)
    return StopScore(len(labels) - stuck, false_stops, stuck, caught, missed)
