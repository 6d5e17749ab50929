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
