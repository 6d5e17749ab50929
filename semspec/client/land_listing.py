"""Where each approved task of a list page is on its way to the base branch, read in one more
visibility call per page, not per task (issue 31 keeps lists one query per page).

A land runs as the workflow ``land-<task id>`` (``LandWorkflow``); a running one means the task
is queued, a finished one keeps where it left the task in its memo (``workflow/land/
land_memo.py``). ``task list`` and the console's board join that list to their rows by task id.
A task's own listing may carry a land state too (``TaskListing.land``, when the loop lands by
itself); that one wins.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio.client import WorkflowExecutionStatus

from semspec.vocabulary.workflow_names import LAND_WORKFLOW
from semspec.workflow.land.land_memo import LAND_MEMO, NOT_FINISHED, land_from_memo

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowExecution

LAND_PREFIX = "land-"
"""``land_workflow_id``'s prefix: what is left of a land's workflow id is its task id."""
PAGE_SIZE = 1000
APPROVED = {"state": "approved"}
ENDED = "the land ended before it kept its result"
"""A land run from before lands kept their memo (``land-memo`` patch): ``task status`` says more."""


def land_query(since: datetime | None) -> str:
    """The visibility query of the lands started at or after ``since``: constants and a time
    this code formats, never a user's text."""
    query = f"WorkflowType = '{LAND_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'"
    if since is None:
        return query
    # A land starts after its task was approved: none of the page's is older than its oldest
    # task. Whole seconds, rounded down, in the RFC 3339 form visibility reads.
    stamp = since.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{query} AND StartTime >= '{stamp}'"


async def land_states(client: Client, since: datetime | None) -> dict[str, dict[str, str]]:
    """Each task's latest land by task id, as ``land_client.land_state`` words it."""
    found: dict[str, dict[str, str]] = {}
    async for wf in client.list_workflows(land_query(since), page_size=PAGE_SIZE):
        task_id = wf.id.removeprefix(LAND_PREFIX)
        # Newest first: a task's land that ran again is listed before the one it replaced.
        if task_id not in found:
            found[task_id] = await _state_of(wf)
    return found


async def _state_of(wf: WorkflowExecution) -> dict[str, str]:
    if wf.status in (None, WorkflowExecutionStatus.RUNNING):
        return {"state": "queued"}
    if wf.status != WorkflowExecutionStatus.COMPLETED:
        return {"state": "land failed", "reason": NOT_FINISHED}
    try:
        raw = await wf.memo_value(LAND_MEMO, None)
    except Exception:  # a memo this code cannot read: say the land ended, not fail the list
        raw = None
    return land_from_memo(raw) or {"state": "land ended", "reason": ENDED}


def listed_land(
    task_id: str, approved: bool, listing: Any, lands: dict[str, dict[str, str]]
) -> dict[str, str] | None:
    """A list row's land state: the task's own listing's when it has one, else its land's,
    else ``approved`` for an approved task; None for a task with nothing to land."""
    own = getattr(listing, "land", None)  # TaskListing.land: absent before the loop lands
    if isinstance(own, dict) and isinstance(own.get("state"), str):
        return {key: value for key, value in own.items() if isinstance(value, str)}
    if not approved:
        return None
    return lands.get(task_id, APPROVED)


def listed_waits(listing: Any) -> list[str]:
    """The tasks a listed task waits on (``TaskListing.waiting_on``; none when absent)."""
    waits = getattr(listing, "waiting_on", None)
    if not isinstance(waits, list | tuple):
        return []
    return [task for task in waits if isinstance(task, str)]
