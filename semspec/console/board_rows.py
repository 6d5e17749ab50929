"""The board's rows: each task's latest workflow run and its listing, read from Temporal's
visibility (the memo the task keeps, ``semspec.workflow.task.listing``) in one call per page, as
``semspec task list`` reads them: no status query per task, so a board of 500 tasks costs one
call and answers with no worker running (issue 31)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from temporalio.service import RPCError, RPCStatusCode

from semspec.client.land_listing import land_states, listed_land, listed_waits
from semspec.client.land_text import list_cell
from semspec.client.task_client import state_name
from semspec.client.task_render import retries_fraction
from semspec.core.errors import InputError
from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_id_of
from semspec.workflow.task.dollars import spent_text
from semspec.workflow.task.listing import TaskListing, read_listing

if TYPE_CHECKING:
    from temporalio.client import Client

BOARD_COLUMNS = ("running", "escalated", "halted", "approved", "failed")
"""The board's sections, in the order shown."""
LIMIT = 500
"""Tasks one page of the board shows, newest first."""
LIST_TIMEOUT = timedelta(seconds=3)
"""How long Temporal may take to list the tasks before the board says it does not answer."""
BAD_TOKEN = "the board's page token is not one the board gave"
FIRST_PAGE = "start from the first page"
QUERY = f"WorkflowType = '{TASK_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'"


@dataclass(frozen=True)
class BoardRow:
    """One task on the board."""

    task_id: str
    column: str
    """One of ``BOARD_COLUMNS``."""
    state: str
    """The workflow's state, as ``semspec task list`` shows it."""
    phase: str
    title: str
    plan_id: str
    iteration: int
    retries: str
    pressure: str
    utilization: float | None
    cost_usd: float
    started: str
    cost: str = ""
    """What was spent as the task page shows it (``spent_text``); empty when nothing is known."""
    reason: str = ""
    """Why it ended, when it ended otherwise than approved (a refusal's reason, an abort's)."""
    closed: str = ""
    """When its workflow closed (ISO 8601); empty while it runs."""
    own_land: dict[str, str] | None = None
    """The land state its listing keeps, if it keeps one (``TaskListing.land``)."""
    waiting_on: tuple[str, ...] = ()
    """Tasks on overlapping files it waits for (``TaskListing.waiting_on``)."""
    land: str = ""
    """Its land cell (``land_text.list_cell``); filled per page, as a land follows the task."""
    land_state: str = ""
    """The land state's name (``approved``, ``queued``, ``landed``, ``land failed``)."""


@dataclass(frozen=True)
class BoardPage:
    """One page of the board's rows and where the next one starts."""

    rows: list[BoardRow]
    after: str
    """Opaque token of the next page (URL-safe text); empty on the last page."""


async def board_rows(
    client: Client, closed: dict[str, BoardRow] | None = None, limit: int = LIMIT
) -> list[BoardRow]:
    """The newest ``limit`` tasks' rows (the board's first page)."""
    return (await board_page(client, closed, limit)).rows


async def board_page(
    client: Client, closed: dict[str, BoardRow] | None = None, limit: int = LIMIT, after: str = ""
) -> BoardPage:
    """A page of up to ``limit`` rows, newest first, from one visibility call; ``after`` is the
    ``BoardPage.after`` of the page before. ``closed`` keeps the rows of closed workflow runs
    (by run id) between calls: they never change."""
    closed = {} if closed is None else closed
    pages = client.list_workflows(
        QUERY, page_size=limit, next_page_token=_token(after), rpc_timeout=LIST_TIMEOUT
    )
    try:
        await pages.fetch_next_page()
    except RPCError as err:
        if after and err.status == RPCStatusCode.INVALID_ARGUMENT:  # a token Temporal refuses
            raise InputError(BAD_TOKEN, hint=FIRST_PAGE) from None
        raise
    rows: list[BoardRow] = []
    seen: set[str] = set()
    for wf in pages.current_page or []:
        if wf.id in seen:
            continue
        seen.add(wf.id)
        if wf.run_id in closed:
            rows.append(closed[wf.run_id])
            continue
        wf_state = state_name(wf.status)
        started = wf.start_time.isoformat(timespec="seconds") if wf.start_time else ""
        closed_at = wf.close_time.isoformat(timespec="seconds") if wf.close_time else ""
        listing = await read_listing(wf)
        made = replace(board_row(task_id_of(wf.id), wf_state, started, listing), closed=closed_at)
        if wf_state != "running" and listing is not None and wf.run_id:
            closed[wf.run_id] = made
        rows.append(made)
    following = pages.next_page_token
    rows = await with_land(client, rows)
    return BoardPage(rows, base64.urlsafe_b64encode(following).decode() if following else "")


async def with_land(client: Client, rows: list[BoardRow]) -> list[BoardRow]:
    """``rows`` with their land cells: the page's lands in one more visibility call, made only
    when an approved task is on it (``client.land_listing``). A closed task's row is kept, but
    its land goes on after it closed, so the cell is read anew for each page."""
    approved = [row for row in rows if row.column == "approved"]
    lands: dict[str, dict[str, str]] = {}
    if approved:
        since = min(row.started for row in approved)
        lands = await land_states(client, datetime.fromisoformat(since) if since else None)
    shown = []
    for row in rows:
        land = listed_land(row.task_id, row.column == "approved", _Own(row.own_land), lands)
        state = land.get("state", "") if land else ""
        cell = list_cell(land, list(row.waiting_on))
        shown.append(replace(row, land=cell, land_state=state))
    return shown


@dataclass(frozen=True)
class _Own:
    """What ``listed_land`` reads of a listing: its own land state."""

    land: dict[str, str] | None


def _token(after: str) -> bytes | None:
    if not after:
        return None
    try:
        return base64.b64decode(after.encode("ascii"), altchars=b"-_", validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InputError(BAD_TOKEN, hint=FIRST_PAGE) from None


def board_row(task_id: str, wf_state: str, started: str, listing: TaskListing | None) -> BoardRow:
    """A task's row from its workflow state and (when it wrote one) its listing."""
    if listing is None:
        column = "running" if wf_state == "running" else "failed"
        return BoardRow(task_id, column, wf_state, "unknown", "", "", 0, "", "", None, 0.0, started)
    return BoardRow(
        task_id=task_id,
        column=column_of(wf_state, listing),
        state=wf_state,
        phase=listing.outcome if wf_state != "running" and listing.outcome else listing.phase,
        title=listing.title,
        plan_id=listing.plan_id,
        iteration=listing.iteration,
        retries=retries_fraction(listing.retries, listing.max_retries),
        pressure=listing.pressure,
        utilization=listing.utilization,
        cost_usd=listing.cost_usd,
        started=started,
        cost=spent_text(listing.cost_usd, listing.unpriced_models),
        reason=(listing.reason or "") if listing.outcome and listing.outcome != "approved" else "",
        own_land=listed_land(task_id, False, listing, {}),
        waiting_on=tuple(listed_waits(listing)),
    )


def column_of(wf_state: str, listing: TaskListing) -> str:
    """The board section of a task."""
    if wf_state == "running":
        if listing.halted:
            return "halted"
        if listing.phase == "escalated" or listing.pending_escalation is not None:
            return "escalated"
        return "running"
    if wf_state == "completed" and listing.outcome == "approved":
        return "approved"
    if listing.halted or listing.outcome == "halted":
        return "halted"
    return "failed"
