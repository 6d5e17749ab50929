"""Pre-execution context budget of a task (ADR-004 "Context Budget Model"), line by line.

    available working memory = context window - system prompt - plan context - task context
                               - estimated output - safety margin (20% of the window)

A task is too large when working memory is below ``context.min_working_memory`` (8K; exactly 8K
fits), when it has more than ``context.max_task_files`` files, or when its file tokens exceed
the file limit: ``context.max_file_share`` (40%) of working memory, capped by the profile's
``recommended_max_file_tokens``. Fractions are rounded against the task: the margin up, the file
limit down. Pure arithmetic, safe to call from workflow code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from semspec.core.config.models import ContextConfig
from semspec.core.errors import InputError
from semspec.model.profiles import ContextProfile

Verdict = Literal["fits", "too_large"]


@dataclass(frozen=True)
class BudgetLine:
    """One line of the arithmetic: ``sign`` is ``""`` (a figure), ``"-"`` or ``"="``."""

    sign: str
    label: str
    tokens: int


@dataclass(frozen=True)
class BudgetReason:
    """Why a task is too large: a stable code and a sentence for people."""

    code: str
    message: str


@dataclass(frozen=True)
class OversizedFile:
    """A single file larger than the file limit: no split of the task can make it fit."""

    path: str
    tokens: int
    limit: int


@dataclass(frozen=True)
class BudgetReport:
    """The whole computation, its verdict, and the reasons when the task is too large."""

    window: int
    available_working_memory: int
    file_tokens_total: int
    file_token_limit: int
    file_count: int
    max_task_files: int
    min_working_memory: int
    verdict: Verdict
    lines: list[BudgetLine] = field(default_factory=list)
    reasons: list[BudgetReason] = field(default_factory=list)
    oversized_file: OversizedFile | None = None

    @property
    def fits(self) -> bool:
        """Whether the task can run as one task."""
        return self.verdict == "fits"


def _fraction(total: int, share: float, *, up: bool) -> int:
    # Rounding the float product first removes noise such as 0.2 * 32000 = 6400.000000000001.
    exact = round(total * share, 6)
    return math.ceil(exact) if up else math.floor(exact)


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        if value < 0:
            raise InputError(
                f"{name} must be zero or more tokens, got {value}", hint="pass a token count >= 0"
            )


def compute_budget(
    profile: ContextProfile,
    system_tokens: int,
    plan_tokens: int,
    task_tokens: int,
    output_tokens: int,
    file_tokens: dict[str, int],
    config: ContextConfig,
) -> BudgetReport:
    """Work out the task's working memory and whether it fits, keeping every line of arithmetic."""
    _check_counts(
        system_tokens=system_tokens,
        plan_tokens=plan_tokens,
        task_tokens=task_tokens,
        output_tokens=output_tokens,
        **{f"file_tokens[{path!r}]": n for path, n in file_tokens.items()},
    )
    window = profile.context_window
    margin = _fraction(window, config.safety_margin, up=True)
    available = window - system_tokens - plan_tokens - task_tokens - output_tokens - margin
    share_limit = _fraction(max(available, 0), config.max_file_share, up=False)
    file_limit = min(share_limit, profile.recommended_max_file_tokens)
    total_files = sum(file_tokens.values())
    lines = [
        BudgetLine("", "context window", window),
        BudgetLine("-", "system prompt", system_tokens),
        BudgetLine("-", "plan context", plan_tokens),
        BudgetLine("-", "task context", task_tokens),
        BudgetLine("-", "estimated output", output_tokens),
        BudgetLine("-", f"safety margin ({config.safety_margin:.0%} of window)", margin),
        BudgetLine("=", "available working memory", available),
        BudgetLine("", "minimum working memory", config.min_working_memory),
        BudgetLine(
            "", f"file share limit ({config.max_file_share:.0%} of working memory)", share_limit
        ),
        BudgetLine("", "profile recommended max file tokens", profile.recommended_max_file_tokens),
        BudgetLine("=", "file token limit (the smaller)", file_limit),
        *(BudgetLine("", f"file {path}", n) for path, n in sorted(file_tokens.items())),
        BudgetLine(
            "=", f"task files ({len(file_tokens)} of at most {config.max_task_files})", total_files
        ),
    ]
    reasons: list[BudgetReason] = []
    if available < config.min_working_memory:
        reasons.append(
            BudgetReason(
                "working_memory_below_minimum",
                f"working memory {available:,} is below the minimum {config.min_working_memory:,}",
            )
        )
    if len(file_tokens) > config.max_task_files:
        reasons.append(
            BudgetReason(
                "too_many_files",
                f"{len(file_tokens)} task files exceed the maximum of {config.max_task_files}",
            )
        )
    if total_files > file_limit:
        reasons.append(
            BudgetReason(
                "file_tokens_over_limit",
                f"task files hold {total_files:,} tokens, over the file limit of {file_limit:,}",
            )
        )
    # The largest file over the limit (ties: the first path) is the one to report.
    oversized = sorted((-n, path) for path, n in file_tokens.items() if n > file_limit)
    largest = (oversized[0][1], -oversized[0][0]) if oversized else None
    return BudgetReport(
        window=window,
        available_working_memory=available,
        file_tokens_total=total_files,
        file_token_limit=file_limit,
        file_count=len(file_tokens),
        max_task_files=config.max_task_files,
        min_working_memory=config.min_working_memory,
        verdict="too_large" if reasons else "fits",
        lines=lines,
        reasons=reasons,
        oversized_file=OversizedFile(*largest, file_limit) if largest else None,
    )
