"""Escalations waiting for a human, and answers to them: what ``semspec escalations`` and the
console's inbox share, so an answer from either is checked and signed the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from semspec.core.errors import InputError

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.vocabulary.events import SuggestedAction
    from semspec.workflow.gates.types import GateResult
    from semspec.workflow.task.messages import Escalation, Resolution, TaskStatus


@dataclass(frozen=True)
class OpenEscalation:
    """An escalation with what a human needs to answer it."""

    escalation: Escalation
    status: TaskStatus
    actions: list[SuggestedAction]
    """The suggested next steps, each a command to paste."""

    @property
    def failed_gates(self) -> list[GateResult]:
        """The last gates that failed: the evidence of a failing change."""
        return [g for g in self.status.last_gates if not g.passed]


async def open_escalations(client: Client) -> list[OpenEscalation]:
    """Every escalation waiting for a human, with its task's status and suggested actions."""
    from semspec.client.task_client import list_tasks, task_status

    found = []
    for row in await list_tasks(client, "escalated"):
        status = await task_status(client, row.task_id)
        esc = status.pending_escalation
        if esc is not None:
            # Imported only now: an empty list needs none of the event models it pulls in.
            from semspec.vocabulary.suggestions import suggested_actions

            found.append(OpenEscalation(esc, status, suggested_actions(esc.task_id, esc.reason)))
    return found


def answer(
    action: str, guidance: str | None, extra_retries: int = 0, extra_usd: float = 0.0
) -> Resolution:
    """The answer a human gave, checked: ``action`` is retry, approve, abort or extend-budget
    (``-`` or ``_``), a retry carries guidance, and dollars go only with extend-budget."""
    from semspec.workflow.task.messages import RESOLUTION_ACTIONS, Resolution

    normalized = action.replace("-", "_")
    if normalized not in RESOLUTION_ACTIONS:
        raise InputError(
            f"--action {action!r} is not one of retry, approve, abort, extend-budget",
            hint="e.g. --action retry --guidance 'handle the empty list'",
        )
    if normalized == "retry" and not (guidance or "").strip():
        raise InputError("action retry needs guidance for the developer (--guidance TEXT)")
    if extra_retries < 0:
        raise InputError("--extra-retries must be 0 or more", hint="e.g. --extra-retries 2")
    if not math.isfinite(extra_usd) or extra_usd < 0:
        raise InputError("--extra-usd must be a number of US dollars", hint="e.g. --extra-usd 5")
    if extra_usd and normalized != "extend_budget":
        raise InputError(
            "--extra-usd goes with --action extend-budget",
            hint="e.g. --action extend-budget --extra-usd 5",
        )
    return Resolution(normalized, guidance, extra_retries, extra_usd=extra_usd)
