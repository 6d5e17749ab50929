"""The context budget policy: before each LLM call, ok, needs_summary or reject (seed 002)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DecisionKind = Literal["ok", "needs_summary", "reject"]
# What a pointer summary costs in the trace, roughly; used to judge whether compaction can help.
POINTER_TOKENS = 300


@dataclass(frozen=True)
class BudgetDecision:
    """The policy's answer for one prospective call."""

    kind: DecisionKind
    reason: str
    total_tokens: int
    budget_tokens: int

    @property
    def deficit(self) -> int:
        """Tokens over the budget (0 when within it)."""
        return max(0, self.total_tokens - self.budget_tokens)


@dataclass(frozen=True)
class ContextBudgetPolicy:
    """Prompt budget of one model: window minus the response reserve, with a summary trigger."""

    window_tokens: int
    response_reserve: int = 4_096
    summary_trigger: float = 0.8
    """Share of the prompt budget above which old tool outputs are pointerized."""
    max_tool_output_tokens: int = 8_000
    """A single tool output above this becomes a pointer at once (the tool payload gate)."""
    min_pointer_tokens: int = 400
    """Outputs smaller than this are never worth a pointer."""

    @classmethod
    def for_window(cls, window_tokens: int, response_reserve: int = 4_096) -> ContextBudgetPolicy:
        """A policy scaled to ``window_tokens``: the payload gate is a tenth of the window."""
        gate = max(1_000, min(8_000, window_tokens // 10))
        return cls(window_tokens, response_reserve, max_tool_output_tokens=gate)

    @property
    def budget_tokens(self) -> int:
        """Tokens the prompt may use."""
        return max(0, self.window_tokens - self.response_reserve)

    @property
    def target_tokens(self) -> int:
        """Prompt size compaction aims for."""
        return int(self.budget_tokens * self.summary_trigger)

    def decide(
        self, total_tokens: int, compactable_tokens: int, compactable_count: int
    ) -> BudgetDecision:
        """Judge a prompt of ``total_tokens``, ``compactable_tokens`` of which could be pointers."""
        budget = self.budget_tokens
        if total_tokens <= self.target_tokens:
            return BudgetDecision("ok", "within budget", total_tokens, budget)
        floor = total_tokens - compactable_tokens + compactable_count * POINTER_TOKENS
        if compactable_count and floor <= budget:
            return BudgetDecision(
                "needs_summary", "old tool outputs can be pointerized", total_tokens, budget
            )
        if total_tokens <= budget:
            return BudgetDecision(
                "ok", "above the summary trigger, nothing to compact", total_tokens, budget
            )
        return BudgetDecision(
            "reject",
            "system prompt, task and kept messages alone exceed the window",
            total_tokens,
            budget,
        )
