"""What a list shows of a task, kept in its workflow's memo so lists read it from Temporal's
visibility in one call per page instead of asking each task's worker (issue 31).

The workflow writes ``TaskListing`` under ``LISTING_MEMO`` whenever it changes (``loop/
listing_memo.py``); ``semspec task list``, ``escalations list``, ``plan status`` and the
console's board read it back with ``read_listing``. Plain data, no Temporal: the workflow and the
clients share it, and it imports nothing of the workflow's (a list pays only for what it shows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.client import WorkflowExecution

    from semspec.workflow.task.messages import TaskStatus

LISTING_MEMO = "listing"
"""Memo key of a task's ``TaskListing``."""
REASON_CHARS = 500
"""A reason is cut here: a memo is held per run in visibility and sent with every list page."""


@dataclass
class TaskListing:
    """One task as lists show it: the few fields of ``TaskStatus`` a row needs."""

    title: str = ""
    plan_id: str = ""
    phase: str = ""
    outcome: str = ""
    reason: str = ""
    iteration: int = 0
    retries: int = 0
    max_retries: int = 0
    halted: bool = False
    cost_usd: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)
    pressure: str = ""
    utilization: float | None = None
    pending_escalation: dict[str, Any] | None = None
    """The question waiting for a human, whole (an ``Escalation``'s fields): ``escalations
    list`` prints it as it is."""
    land: dict[str, str] | None = None
    """Where a task that lands itself is on its way to the base (``TaskStatus.land``, the shape
    of ``land_client.land_state``); None = not landing itself."""
    waiting_on: list[str] = field(default_factory=list)
    """Earlier tasks on the same files this one waits for (phase ``waiting``; docs/landing.md)."""


def listing_of(status: TaskStatus) -> TaskListing:
    """The listing of a task's current status."""
    context = status.context
    return TaskListing(
        title=status.title,
        plan_id=status.plan_id or "",
        phase=status.phase,
        outcome=status.outcome or "",
        reason=(status.reason or "")[:REASON_CHARS],
        iteration=status.iteration,
        retries=status.retries,
        max_retries=status.max_retries,
        halted=status.halted,
        cost_usd=status.usage.cost_usd,
        unpriced_models=list(status.usage.unpriced_models),
        pressure=context.pressure if context else "",
        # Two decimals: the memo changes per shown percent, not per token.
        utilization=round(context.utilization, 2) if context else None,
        pending_escalation=asdict(esc) if (esc := status.pending_escalation) else None,
        land=dict(status.land) if status.land else None,
        waiting_on=list(status.waiting_on),
    )


def submitted_listing(title: str, plan_id: str | None, max_retries: int) -> TaskListing:
    """The listing a task starts with, set by whoever starts it (before a worker takes it)."""
    return TaskListing(
        title=title, plan_id=plan_id or "", phase="starting", max_retries=max_retries
    )


def memo_fields(listing: TaskListing) -> dict[str, Any]:
    """The memo entry that holds ``listing``."""
    return {LISTING_MEMO: listing}


async def read_listing(wf: WorkflowExecution) -> TaskListing | None:
    """A listed run's ``TaskListing``; None for a run that never wrote one (or wrote another
    shape: a list shows what Temporal alone knows rather than fail)."""
    try:
        # Decoded as plain JSON and checked here: the converter's dataclass decoding costs
        # 25 times as much, most of a 500-row list's time (bench/lists.py).
        raw = await wf.memo_value(LISTING_MEMO, None)
    except Exception:  # a memo this code cannot read is a row without details, not an error
        return None
    return listing_from_memo(raw)


_FIELDS: dict[str, tuple[type, ...]] = {
    "title": (str,),
    "plan_id": (str,),
    "phase": (str,),
    "outcome": (str,),
    "reason": (str,),
    "iteration": (int,),
    "retries": (int,),
    "max_retries": (int,),
    "halted": (bool,),
    "cost_usd": (float, int),
    "pressure": (str,),
}


def listing_from_memo(raw: Any) -> TaskListing | None:
    """``raw`` (the memo's JSON) as a ``TaskListing``; None unless it has that shape. Fields
    missing or of another type keep their defaults, so a memo of an older or newer shape still
    gives a row."""
    if not isinstance(raw, dict):
        return None
    found: dict[str, Any] = {
        name: raw[name]
        for name, kinds in _FIELDS.items()
        if isinstance(raw.get(name), kinds)
        and (bool not in kinds or type(raw[name]) is bool)
        and (bool in kinds or not isinstance(raw[name], bool))
    }
    if "cost_usd" in found:
        found["cost_usd"] = float(found["cost_usd"])
    models = raw.get("unpriced_models")
    if isinstance(models, list):
        found["unpriced_models"] = [m for m in models if isinstance(m, str)]
    utilization = raw.get("utilization")
    if isinstance(utilization, int | float) and not isinstance(utilization, bool):
        found["utilization"] = float(utilization)
    waiting_on = raw.get("waiting_on")
    if isinstance(waiting_on, list):
        found["waiting_on"] = [t for t in waiting_on if isinstance(t, str)]
    escalation = raw.get("pending_escalation")
    if isinstance(escalation, dict):
        found["pending_escalation"] = escalation
    land = raw.get("land")
    if isinstance(land, dict) and isinstance(land.get("state"), str):
        found["land"] = {str(k): v for k, v in land.items() if isinstance(v, str)}
    return TaskListing(**found)
