"""What a task spent, summed from its agents' turns: tokens and dollars, in all and per model.

Plain data and arithmetic (no I/O, no clock), so the workflow keeps it in its state, carries it
over checkpoints and writes it to the Temporal memo under ``USAGE_MEMO``; ``semspec usage`` reads
the memos of finished and running tasks back with ``UsageTotals.from_memo``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semspec.agents.protocol import TurnUsage

USAGE_MEMO = "usage"
"""Memo key of a task's ``UsageTotals`` (as ``to_memo`` writes it)."""
PLAN_MEMO = "plan_id"
"""Memo key of the plan a task belongs to (absent for a lone task)."""


@dataclass
class ModelUsage:
    """Calls, tokens and dollars of one model."""

    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    unpriced_steps: int = 0
    """Steps taken while the model had no price: their dollars are unknown for good."""
    estimated: bool = False
    """Some of its tokens are an estimate (an agent CLI stopped before it reported them)."""


@dataclass
class UsageTotals:
    """A task's (or plan's) spending so far."""

    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    by_model: dict[str, ModelUsage] = field(default_factory=dict)
    unpriced_models: list[str] = field(default_factory=list)
    """Models whose steps could not be priced; their tokens count, their dollars do not."""

    def add(self, turn: TurnUsage) -> None:
        """Add one agent turn."""
        self.steps += turn.steps
        self.input_tokens += turn.input_tokens
        self.output_tokens += turn.output_tokens
        self.cached_tokens += turn.cached_tokens
        self.cost_usd = dollars_sum(self.cost_usd, turn.cost_usd)
        name = turn.model or "unknown"
        model = self.by_model.setdefault(name, ModelUsage())
        model.steps += turn.steps
        model.input_tokens += turn.input_tokens
        model.output_tokens += turn.output_tokens
        model.cached_tokens += turn.cached_tokens
        model.cost_usd = dollars_sum(model.cost_usd, turn.cost_usd)
        model.estimated = model.estimated or turn.estimated
        if turn.unpriced:
            model.unpriced = True
            model.unpriced_steps += turn.steps
            if name not in self.unpriced_models:
                self.unpriced_models.append(name)
        elif turn.steps and model.unpriced and not model.unpriced_steps:
            # Only turns stopped before their first call were unpriced (the loop asked a human
            # about the model); it has a price now and nothing it did went uncounted.
            model.unpriced = False
            self.unpriced_models.remove(name)

    def merge(self, other: UsageTotals) -> None:
        """Add another task's totals (a plan sums its subtasks)."""
        for name, model in other.by_model.items():
            self.add(
                TurnUsage(
                    steps=model.steps,
                    input_tokens=model.input_tokens,
                    output_tokens=model.output_tokens,
                    cached_tokens=model.cached_tokens,
                    cost_usd=model.cost_usd,
                    model=name,
                    unpriced=model.unpriced,
                    estimated=model.estimated,
                )
            )

    def to_memo(self) -> dict[str, Any]:
        """Plain JSON for the Temporal memo (dollars rounded to a millionth)."""
        return {
            "steps": self.steps,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "by_model": {
                name: {**vars(model), "cost_usd": round(model.cost_usd, 6)}
                for name, model in sorted(self.by_model.items())
            },
            "unpriced_models": sorted(self.unpriced_models),
        }

    @classmethod
    def from_memo(cls, raw: Any) -> UsageTotals:
        """Read back what ``to_memo`` wrote; anything else (an older task) reads as nothing."""
        if not isinstance(raw, dict):
            return cls()
        totals = cls()
        models = raw.get("by_model")
        for name, model in (models if isinstance(models, dict) else {}).items():
            if not isinstance(model, dict):
                continue
            totals.add(
                TurnUsage(
                    steps=_int(model.get("steps")),
                    input_tokens=_int(model.get("input_tokens")),
                    output_tokens=_int(model.get("output_tokens")),
                    cached_tokens=_int(model.get("cached_tokens")),
                    cost_usd=_float(model.get("cost_usd")),
                    model=str(name),
                    unpriced=model.get("unpriced") is True,
                    estimated=model.get("estimated") is True,
                )
            )
        return totals


def dollars_sum(spent: float, more: float) -> float:
    """``spent + more`` kept to a billionth of a dollar, so sums read as ``0.036`` in status and
    JSON rather than ``0.036000000000000004``."""
    return round(spent + more, 9)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _float(value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else 0.0
