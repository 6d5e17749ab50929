"""The read budget guard: soft limit reduces payloads and guides, hard limit refuses."""

from __future__ import annotations

from typing import Literal

from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.session import SessionMetrics

BudgetState = Literal["ok", "soft", "hard"]


def budget_state(metrics: SessionMetrics, policy: StabilizationPolicy) -> BudgetState:
    """Where the session stands against its read count and line budgets."""
    if (
        metrics.reads_count >= policy.max_reads_per_session
        or metrics.reads_lines_total >= policy.max_total_read_lines
    ):
        return "hard"
    if (
        metrics.reads_count >= policy.soft_ratio * policy.max_reads_per_session
        or metrics.reads_lines_total >= policy.soft_ratio * policy.max_total_read_lines
    ):
        return "soft"
    return "ok"


def line_allowance(metrics: SessionMetrics, policy: StabilizationPolicy) -> int:
    """Lines the next read may return: the per-read cap, smaller under the soft limit."""
    per_read = policy.max_single_read_lines
    if budget_state(metrics, policy) == "soft":
        per_read = min(per_read, policy.soft_read_lines)
    remaining = policy.max_total_read_lines - metrics.reads_lines_total
    return max(0, min(per_read, remaining))
