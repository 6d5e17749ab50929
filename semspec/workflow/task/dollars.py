"""The task's dollar budget as pure decisions over plain numbers, beside ``bounds``.

A task may spend at most its cap: the smaller of its own budget (``loop.max_cost_usd``) and its
share of its parent's (a plan's ``max_cost_usd``, or a split task's), plus what humans granted
with ``extend_budget --extra-usd``. Each agent turn gets what is left as its
``cost_budget_usd`` and stops at the next step once that is spent, so a task overshoots its cap
by at most the one step that crossed it. Before each agent call the loop asks ``check``: a spent
budget, or a model without a price that no human accepted, escalates instead of running on.
No Temporal, no I/O: tested directly (``tests/workflow/test_dollar_budget_rules.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from semspec.core.reasons import FallbackReason
from semspec.workflow.task.loop.bounds import Escalate
from semspec.workflow.task.usage import UsageTotals, dollars_sum

DOLLAR_STOPS = frozenset({"cost_budget", "unknown_price"})
"""Why an agent stops a turn for money (``StopReason``): the loop then asks ``check``."""


@dataclass
class DollarBudget:
    """What one task may spend, and what humans said about it."""

    task_usd: float | None = None
    """The task's own budget; None = none."""
    share_usd: float | None = None
    """Its share of the parent's budget (plan or split task); None = none."""
    share_of: str = "its plan"
    """Whose budget the share is of, for messages."""
    granted_usd: float = 0.0
    """Dollars humans added (``extend_budget``)."""
    accept_unpriced: bool = False
    """A human agreed to run models without a price."""

    @property
    def cap_usd(self) -> float | None:
        """The most the task may spend, with what was granted; None = no dollar budget."""
        caps = [c for c in (self.task_usd, self.share_usd) if c is not None]
        return min(caps) + self.granted_usd if caps else None

    def turn_budget(self, spent_usd: float) -> float | None:
        """Dollars the next agent turn may spend (never below 0); None = no cap."""
        cap = self.cap_usd
        return None if cap is None else max(cap - spent_usd, 0.0)

    def check(self, usage: UsageTotals) -> Escalate | None:
        """The escalation the next agent call calls for (None: go on).

        Without a budget nothing is asked. With one, an unpriced model comes first: its
        dollars are unknown, so no sum of them can say the budget holds.
        """
        cap = self.cap_usd
        if cap is None:
            return None
        if usage.unpriced_models and not self.accept_unpriced:
            return Escalate(FallbackReason.UNKNOWN_PRICE, unpriced_message(usage.unpriced_models))
        if usage.cost_usd >= cap:
            return Escalate(FallbackReason.BUDGET_EXHAUSTED, self._spent_message(usage.cost_usd))
        return None

    def stopped(self, reason: str, usage: UsageTotals) -> Escalate:
        """The escalation for a turn the agent stopped for ``reason`` (a ``DOLLAR_STOPS``
        member) where ``check`` sees nothing wrong: the agent's word wins, failing closed."""
        if reason == "unknown_price":
            named = usage.unpriced_models or ["(unnamed)"]
            return Escalate(FallbackReason.UNKNOWN_PRICE, unpriced_message(named))
        return Escalate(FallbackReason.BUDGET_EXHAUSTED, self._spent_message(usage.cost_usd))

    def grant(self, extra_usd: float) -> float:
        """Add what an ``extend_budget`` answer names; naming none adds the task's own budget
        again (its share when it has none). Returns the dollars added."""
        added = extra_usd or self.task_usd or self.share_usd or 0.0
        self.granted_usd += added
        return added

    def _spent_message(self, spent_usd: float) -> str:
        parts = []
        if self.task_usd is not None:
            parts.append(f"task budget {usd(self.task_usd)}")
        if self.share_usd is not None:
            parts.append(f"share of {self.share_of}'s budget {usd(self.share_usd)}")
        if self.granted_usd:
            parts.append(f"granted {usd(self.granted_usd)}")
        cap = self.cap_usd or 0.0
        return f"dollar budget spent: {usd(spent_usd)} of {usd(cap)} ({'; '.join(parts)})"


def unpriced_message(models: Sequence[str]) -> str:
    """The question for a human when models without a price would run under a budget."""
    names = ", ".join(sorted(models))
    return (
        f"model {names} has no price in the model registry, so its calls cannot be counted "
        "against the dollar budget; no call was made. Add a cost to .semspec/models.yaml, or "
        "answer approve to run it uncounted for the rest of the task"
    )


def add_iteration_cost(costs: list[float], iteration: int, cost_usd: float) -> None:
    """Add ``cost_usd`` to iteration ``iteration`` (from 1) of ``costs``, growing it as needed."""
    if iteration < 1:
        return
    costs.extend([0.0] * (iteration - len(costs)))
    costs[iteration - 1] = dollars_sum(costs[iteration - 1], cost_usd)


def plan_share(
    budget_usd: float | None, finished_usd: float, running_shares: Sequence[float], starting: int
) -> float | None:
    """Each starting plan task's share: what the plan has not spent nor handed to a running
    task, split evenly among the ``starting`` tasks (never below 0); None = no plan budget."""
    if budget_usd is None:
        return None
    free = budget_usd - finished_usd - sum(running_shares)
    return max(free, 0.0) / max(starting, 1)


def usd(amount: float) -> str:
    """Dollars as people read them: cents, or four decimals below a dollar."""
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def spent_text(cost_usd: float, unpriced_models: Sequence[str]) -> str:
    """What was spent, one way everywhere (task status, ``usage``, the console's task page,
    board and steps): the priced figure; ``unpriced (model m)`` when nothing spent had a price,
    so an unknown price never reads as ``$0.0000``; both when some of it had one."""
    if not unpriced_models:
        return usd(cost_usd)
    label = "model" if len(unpriced_models) == 1 else "models"
    unpriced = f"unpriced ({label} {', '.join(sorted(unpriced_models))})"
    return f"{usd(cost_usd)} + {unpriced}" if cost_usd else unpriced


def step_cost_text(cost_usd: float | None, model: str | None) -> str:
    """One step's cost: the priced figure, ``unpriced`` with the model named, or nothing for a
    step that called no model."""
    if cost_usd is not None:
        return usd(cost_usd)
    return spent_text(0.0, [model]) if model else ""
