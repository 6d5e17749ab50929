"""What tasks spent, grouped for ``semspec usage``: by task, plan, start day or model.

Pure arithmetic over ``UsageTotals`` read back from each task workflow's memo; the command reads
the memos from Temporal and hands them in as ``TaskSpending``. Tokens of models without a price
count, their dollars cannot: a group that used one names it in ``unpriced_models``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from semspec.workflow.task.usage import ModelUsage, UsageTotals

UsageBy = Literal["task", "plan", "day", "model"]
USAGE_GROUPINGS: tuple[UsageBy, ...] = get_args(UsageBy)
NO_PLAN = "(no plan)"
"""The plan group of tasks submitted on their own."""
NO_DAY = "(unknown)"


@dataclass(frozen=True)
class TaskSpending:
    """One task's spending as its workflow's memo holds it."""

    task_id: str
    usage: UsageTotals
    plan_id: str | None = None
    started: datetime | None = None
    running: bool = False


@dataclass
class UsageGroup:
    """Tasks, steps, tokens and dollars of one group (or of all: the total)."""

    key: str
    tasks: int = 0
    running: int = 0
    steps: int = 0
    input_tokens: int = 0
    """Every input token, cached ones included."""
    cached_tokens: int = 0
    """The part of ``input_tokens`` read from the provider's prompt cache."""
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Dollars of the priced models only."""
    unpriced_models: list[str] = field(default_factory=list)
    """Models of this group whose dollars are unknown."""

    def add_model(self, name: str, usage: ModelUsage) -> None:
        """Add one model's part of one task."""
        self.steps += usage.steps
        self.input_tokens += usage.input_tokens
        self.cached_tokens += usage.cached_tokens
        self.output_tokens += usage.output_tokens
        self.cost_usd += usage.cost_usd
        if usage.unpriced and name not in self.unpriced_models:
            self.unpriced_models.append(name)
            self.unpriced_models.sort()

    def count_task(self, task: TaskSpending) -> None:
        self.tasks += 1
        self.running += task.running

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, dollars rounded to a millionth."""
        return {
            "key": self.key,
            "tasks": self.tasks,
            "running": self.running,
            "steps": self.steps,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "unpriced_models": list(self.unpriced_models),
        }


@dataclass(frozen=True)
class UsageReport:
    """The groups, in order of their keys, and the total over every task."""

    by: UsageBy
    groups: list[UsageGroup]
    total: UsageGroup

    def to_json(self) -> dict[str, Any]:
        """One object for scripts: ``by``, ``groups`` and ``total``."""
        return {
            "by": self.by,
            "groups": [group.to_json() for group in self.groups],
            "total": self.total.to_json(),
        }


def day_of(started: datetime | None) -> str:
    """The UTC date a task started (ISO), or ``(unknown)``."""
    if started is None:
        return NO_DAY
    return started.astimezone(UTC).date().isoformat()


def _key(task: TaskSpending, by: UsageBy) -> str:
    if by == "task":
        return task.task_id
    if by == "plan":
        return task.plan_id or NO_PLAN
    return day_of(task.started)


def usage_report(tasks: Iterable[TaskSpending], by: UsageBy = "task") -> UsageReport:
    """``tasks`` grouped ``by`` task, plan, start day (UTC) or model, with a total row.

    By model, a task counts in each model's group it used; a task that spent nothing recorded
    counts in no model's group but in the total.
    """
    groups: dict[str, UsageGroup] = {}
    total = UsageGroup("total")
    for task in tasks:
        models = task.usage.by_model
        keys = sorted(models) if by == "model" else [_key(task, by)]
        for group in (total, *(groups.setdefault(key, UsageGroup(key)) for key in keys)):
            group.count_task(task)
            for name, model in models.items():
                if by != "model" or group is total or name == group.key:
                    group.add_model(name, model)
    return UsageReport(by, [groups[key] for key in sorted(groups)], total)
