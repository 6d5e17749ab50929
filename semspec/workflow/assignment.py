"""Model assignment per role (ADR-004 "SNCO-level assignment"), with a reason for every candidate.

1. keep models with the role among their capabilities;
2. keep those whose sweet spot holds the task: system prompt overhead + task tokens;
3. rank by recorded performance in that role: approval rate (Laplace-smoothed, so an untried
   model scores 0.5 and a model that keeps failing drops below it), then fewer iterations, fewer
   tokens per approved task, lower latency (an unknown figure ranks after any known one);
4. break ties by price (input + output per 1M; unknown last), then by id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from semspec.core.errors import InputError
from semspec.model.performance import PerformanceHistory, PerformanceStats
from semspec.model.profiles import ModelSpec, Role


@dataclass(frozen=True)
class CandidateReason:
    """One model considered for the role: whether it qualified, its rank, and why."""

    model: str
    eligible: bool
    reason: str
    rank: int | None = None
    approval_rate: float | None = None
    mean_iterations: float | None = None
    tokens_per_approval: float | None = None
    mean_latency_s: float | None = None
    cost_per_1m: float | None = None


@dataclass(frozen=True)
class Assignment:
    """The chosen model for a role (None when nothing qualifies) and every candidate's reason."""

    role: Role
    task_tokens: int
    chosen: str | None
    candidates: list[CandidateReason] = field(default_factory=list)


def _or_inf(value: float | None) -> float:
    return math.inf if value is None else value


def _rank_key(spec: ModelSpec, stats: PerformanceStats) -> tuple[float, ...]:
    cost = spec.cost.blended_per_1m if spec.cost is not None else None
    return (
        -stats.approval_rate,
        _or_inf(stats.mean_iterations),
        _or_inf(stats.tokens_per_approval),
        _or_inf(stats.mean_latency_s),
        _or_inf(cost),
    )


def _describe(stats: PerformanceStats) -> str:
    if stats.tasks == 0:
        return "no history for this role (approval prior 0.50)"
    return (
        f"{stats.approved}/{stats.tasks} approved (rate {stats.approval_rate:.2f}), "
        f"{stats.mean_iterations:.1f} iterations per task"
    )


def explain_assignment(
    models: Iterable[ModelSpec], role: Role, task_tokens: int, history: PerformanceHistory
) -> Assignment:
    """Rank ``models`` for ``role`` on a task of ``task_tokens`` tokens and say why for each."""
    if task_tokens < 0:
        raise InputError(f"task_tokens must be zero or more, got {task_tokens}")
    rejected: list[CandidateReason] = []
    ranked: list[tuple[tuple[float, ...], str, ModelSpec, PerformanceStats]] = []
    for spec in models:
        if not spec.can(role):
            rejected.append(CandidateReason(spec.id, False, f"cannot take the {role} role"))
            continue
        needed = spec.context.system_prompt_overhead + task_tokens
        if needed > spec.context.sweet_spot:
            rejected.append(
                CandidateReason(
                    spec.id,
                    False,
                    f"needs {needed:,} tokens (system {spec.context.system_prompt_overhead:,} + "
                    f"task {task_tokens:,}), over its sweet spot of {spec.context.sweet_spot:,}",
                )
            )
            continue
        stats = history.stats(spec.id, role)
        ranked.append((_rank_key(spec, stats), spec.id, spec, stats))
    ranked.sort(key=lambda item: (item[0], item[1]))
    chosen: list[CandidateReason] = []
    for position, (_key, ident, spec, stats) in enumerate(ranked, start=1):
        cost = spec.cost.blended_per_1m if spec.cost is not None else None
        price = f"${cost:.2f}/1M in+out" if cost is not None else "price unknown"
        verdict = "chosen" if position == 1 else f"rank {position}"
        chosen.append(
            CandidateReason(
                ident,
                True,
                f"{verdict}: fits its sweet spot; {_describe(stats)}; {price}",
                rank=position,
                approval_rate=stats.approval_rate,
                mean_iterations=stats.mean_iterations,
                tokens_per_approval=stats.tokens_per_approval,
                mean_latency_s=stats.mean_latency_s,
                cost_per_1m=cost,
            )
        )
    return Assignment(
        role=role,
        task_tokens=task_tokens,
        chosen=ranked[0][1] if ranked else None,
        candidates=[*chosen, *sorted(rejected, key=lambda c: c.model)],
    )


def assign_model(
    models: Iterable[ModelSpec], role: Role, task_tokens: int, history: PerformanceHistory
) -> str:
    """The id of the best model for ``role``; InputError when no model qualifies."""
    assignment = explain_assignment(models, role, task_tokens, history)
    if assignment.chosen is None:
        raise InputError(
            f"no model can take the {role} role for a task of {task_tokens:,} tokens",
            hint="decompose the task (`semspec budget`) or add a model with a larger sweet spot "
            "to .semspec/models.yaml",
        )
    return assignment.chosen
