"""The answers a human may give to an escalation: one table, and the one check of an answer.

``semspec escalations resolve`` (through ``client.escalations.answer``), the console's inbox
(its buttons and its POST, through the same function) and the task workflow's update validator
(``workflow.task.loop.escalations``) all read ``ACTIONS`` and call ``answer_problem``, so an answer
refused by one is refused by all, in the same words. ``answer_problem`` is pure (no I/O, no
clock): the workflow runs it while validating the ``resolve_escalation`` update.

A new action is a row here and a name in ``ResolutionAction``, plus what the task loop does with
it (``CONTRIBUTING.md``, "Add an escalation action").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, get_args

ResolutionAction = Literal["retry", "approve", "abort", "extend_budget"]
"""The ``action`` of an answer, as the workflow and the loop events carry it."""


@dataclass(frozen=True)
class ActionSpec:
    """One answer a human may give."""

    name: ResolutionAction
    """The action as the workflow takes it (``extend_budget``)."""
    button: str
    """The console's label for it."""
    needs_guidance: bool = False
    """Whether the answer must say what the developer should do (``--guidance``)."""
    grants: bool = False
    """Whether the answer may carry ``extra_retries`` and ``extra_usd``."""

    @property
    def cli_name(self) -> str:
        """The action as ``--action`` spells it (``extend-budget``; ``_`` is taken too)."""
        return self.name.replace("_", "-")


ACTIONS: Final[tuple[ActionSpec, ...]] = (
    ActionSpec("retry", "Retry with guidance", needs_guidance=True),
    ActionSpec("approve", "Approve"),
    ActionSpec("abort", "Abort"),
    ActionSpec("extend_budget", "Extend budget", grants=True),
)
"""Every action, in the order the CLI's help and the console's buttons show them."""

RESOLUTION_ACTIONS: Final[tuple[ResolutionAction, ...]] = get_args(ResolutionAction)
"""The names of ``ResolutionAction``; a test keeps them equal to ``ACTIONS``' names."""


@dataclass(frozen=True)
class AnswerProblem:
    """Why an answer is refused, and an example of a good one."""

    message: str
    hint: str | None = None


def action_named(action: str) -> ActionSpec | None:
    """The action ``action`` names, spelled with ``-`` or ``_``; None for no action."""
    wanted = action.replace("-", "_")
    return next((spec for spec in ACTIONS if spec.name == wanted), None)


def answer_problem(
    action: str, guidance: str | None, extra_retries: int = 0, extra_usd: float = 0.0
) -> AnswerProblem | None:
    """What is wrong with an answer, or None when it may be sent: ``action`` is one of
    ``ACTIONS``, a retry carries guidance, and retries and dollars are granted only by an action
    that grants (extra retries are ignored by the others), as numbers of 0 or more."""
    spec = action_named(action)
    if spec is None:
        names = ", ".join(s.cli_name for s in ACTIONS)
        return AnswerProblem(
            f"--action {action!r} is not one of {names}",
            "e.g. --action retry --guidance 'handle the empty list'",
        )
    if spec.needs_guidance and not (guidance or "").strip():
        return AnswerProblem(
            f"action {spec.cli_name} needs guidance for the developer (--guidance TEXT)"
        )
    if extra_retries < 0:
        return AnswerProblem("--extra-retries must be 0 or more", "e.g. --extra-retries 2")
    if not math.isfinite(extra_usd) or extra_usd < 0:
        return AnswerProblem("--extra-usd must be a number of US dollars", "e.g. --extra-usd 5")
    if extra_usd and not spec.grants:
        granting = next(s.cli_name for s in ACTIONS if s.grants)
        return AnswerProblem(
            f"--extra-usd goes with --action {granting}",
            f"e.g. --action {granting} --extra-usd 5",
        )
    return None
