"""What a step, a pass of the loop or a question to a human returns to ``TaskWorkflow``.

Helpers of the workflow return what happened and the workflow decides (STYLE.md: return
outcomes, do not call back): a step returns its result, or ``Interrupted`` (a halt or pause
stopped it), or ``BudgetStop`` (the dollar budget says the agent call may not go ahead); a pass
of the loop ends with ``Finished`` (the task is over), ``Answered`` (a human answered an
escalation: the loop acts on the answer) or ``None`` (go on with the next pass). No exception
carries any of these. Plain data: no Temporal here.
"""

from __future__ import annotations

from dataclasses import dataclass

from semspec.workflow.task.loop.bounds import Escalate
from semspec.workflow.task.messages import Resolution


@dataclass(frozen=True)
class Interrupted:
    """A halt or pause from the risk monitor stopped ``step``, before or after it ``started``."""

    step: str
    started: bool


@dataclass(frozen=True)
class BudgetStop:
    """The agent call may not go ahead until a human answers ``escalate`` (a spent dollar
    budget, or a model without a price); the step did not run, or ran and stopped for money."""

    escalate: Escalate


@dataclass(frozen=True)
class Answered:
    """A human answered the escalation asked for ``reason``."""

    resolution: Resolution
    reason: str


@dataclass(frozen=True)
class Finished:
    """The loop is over with ``outcome`` (``approved``, ``aborted``, ...)."""

    outcome: str
    reason: str | None = None


PassEnd = Finished | Answered | None
"""How one pass of the loop ended: over, answered by a human, or on to the next pass."""
