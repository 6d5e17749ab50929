"""Escalations waiting for a human, and answers to them: what ``semspec escalations`` and the
console's inbox share, so an answer from either is checked and signed the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


async def waiting_escalations(client: Client) -> list[dict[str, Any]]:
    """Every escalation waiting for a human (an ``Escalation``'s fields), newest task first,
    from the tasks' memos in Temporal's visibility: one call per page, no question to a worker
    (issue 31)."""
    from semspec.client.task_client import list_tasks

    page = await list_tasks(client, "escalated", None)
    found = []
    for row in page.rows:
        listing = page.listings.get(row.task_id)
        if listing is not None and listing.pending_escalation is not None:
            found.append(listing.pending_escalation)
    return found


async def open_escalations(client: Client) -> list[OpenEscalation]:
    """Every escalation waiting for a human, with its task's whole status (the evidence) and
    suggested actions: a status query per escalated task, for the inbox that shows them all."""
    from semspec.client.task_client import list_tasks, task_status

    found = []
    for row in (await list_tasks(client, "escalated", None)).rows:
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
    """The answer a human gave, checked by the one check the workflow also runs
    (``vocabulary.resolution_actions.answer_problem``); ``action`` may be spelled with ``-``."""
    from semspec.vocabulary.resolution_actions import action_named, answer_problem
    from semspec.workflow.task.messages import Resolution

    if problem := answer_problem(action, guidance, extra_retries, extra_usd):
        raise InputError(problem.message, hint=problem.hint)
    spec = action_named(action)
    assert spec is not None  # the check refuses an unknown action
    return Resolution(spec.name, guidance, extra_retries, extra_usd=extra_usd)
