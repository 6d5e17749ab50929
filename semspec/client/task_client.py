"""Talk to task workflows: submit, status, list, cancel, resolve escalations.

Starting a task and answering an escalation are signed with the stack owner's key (ADR 0004);
the workflow refuses both without a valid signature.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from semspec.client.task_states import LIST_LIMIT, TEMPORAL_SPELLING, check_state
from semspec.core import telemetry
from semspec.core.errors import InputError, NotFoundError, SemspecError
from semspec.core.owner_key import OwnerKey
from semspec.core.telemetry.spans import CONVERSATION, TASK_ID
from semspec.core.telemetry.task_span import task_span_name
from semspec.vocabulary.workflow_names import (
    QUERY_STATUS,
    TASK_WORKFLOW,
    UPDATE_RESOLVE,
    task_id_of,
    task_workflow_id,
)

if TYPE_CHECKING:
    from semspec.workflow.task.listing import TaskListing
    from semspec.workflow.task.messages import (
        Resolution,
        ResolutionAck,
        TaskInput,
        TaskResult,
        TaskStatus,
    )

QUERY_TIMEOUT_S = 10.0
ANSWER_QUERY_TIMEOUT_S = 30.0
"""How long ``resolve`` waits for the pending question. Temporal sends a query to the worker that
ran the task last for about 10 s after that worker stopped polling, so right after a worker was
replaced the first query waits that long; an answer, unlike a glance at the status, is worth it."""
PAGE_SIZE = 1000
"""Runs per visibility call at most (the frontend's default cap on a page)."""
CLOSED_QUERY_TIMEOUT_S = 5.0
"""A closed workflow answers a query by replay on a worker; without one it never answers."""


class StatusQueryTimeout(SemspecError):
    """A running task's status query got no answer in time: a busy or restarting worker, or
    none at all. Asking again later can succeed (``task submit --wait`` does)."""

    retryable = True


@dataclass
class TaskSummary:
    """One row of ``semspec task list``."""

    task_id: str
    state: str
    title: str
    phase: str
    iteration: int
    started: str
    land: dict[str, str] | None = None
    """Where approved work is on its way to the base (``land_client.land_state``'s shape)."""
    waiting_on: list[str] = field(default_factory=list)
    """Tasks on overlapping files it waits for before it goes on."""


@dataclass
class TaskPage:
    """What ``list_tasks`` found: the rows, and whether more tasks are beyond its limit."""

    rows: list[TaskSummary]
    more: bool
    listings: dict[str, TaskListing] = field(default_factory=dict)
    """Each listed task's memo by task id (absent for a run that never wrote one)."""


async def submit(
    client: Client, task_queue: str, inp: TaskInput, owner: OwnerKey
) -> WorkflowHandle[Any, Any]:
    """Start the task's workflow, signed by ``owner``; a task id that is running or already ran
    is an input error.

    A task runs once: a second run under the same id would work on the same branch and hide
    the first run's history behind the new one. With telemetry on, the submission is the root
    span of the task's trace.
    """
    from temporalio.common import WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from semspec.client.task_claims import start_claimed
    from semspec.workflow.task.listing import memo_fields, submitted_listing
    from semspec.workflow.task.messages import TASK_START, TaskResult, signed_start

    task_id = inp.spec.task_id
    workflow_id = task_workflow_id(task_id)
    traces = telemetry.current()
    try:
        # Named for the task: a backend lists traces by their root span's name.
        name = task_span_name(task_id, inp.spec.title)
        with traces.span(name, {TASK_ID: task_id, CONVERSATION: task_id}, "client"):
            # By name, not by TaskWorkflow.run: the CLI then need not import the workflow's code.
            # Claimed: it waits for earlier tasks on its files (task_claims, docs/landing.md).
            return await start_claimed(
                client,
                inp,
                lambda claimed: traces.traced_client(client).start_workflow(
                    TASK_WORKFLOW,
                    signed_start(owner, TASK_START, workflow_id, claimed),
                    id=workflow_id,
                    task_queue=task_queue,
                    result_type=TaskResult,
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    # Lists show the task from its memo even before a worker takes it (issue 31).
                    memo=memo_fields(
                        submitted_listing(inp.spec.title, inp.spec.plan_id, inp.limits.max_retries)
                    ),
                ),
            )
    except WorkflowAlreadyStartedError:
        pass
    state = await describe_state(client, task_id)
    how = "is already running" if state == "running" else f"already ran ({state})"
    raise InputError(
        f"task {task_id!r} {how}",
        hint=f"see it with `semspec task status {task_id}`; to run it again, give it a new --id",
    )


def _handle(client: Client, task_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(task_workflow_id(task_id))


def state_name(status: WorkflowExecutionStatus | None) -> str:
    """Temporal's execution status in lower case, ``cancelled`` spelled as in our outcomes."""
    name = (status or WorkflowExecutionStatus.RUNNING).name.lower()
    return TEMPORAL_SPELLING.get(name, name)


async def describe_state(client: Client, task_id: str) -> str:
    """The workflow's execution state (running, completed, failed, cancelled, ...)."""
    try:
        desc = await _handle(client, task_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NotFoundError(
                "task", task_id, hint="list tasks with `semspec task list`"
            ) from None
        raise
    return state_name(desc.status)


async def task_exists(client: Client, task_id: str) -> bool:
    """Whether a task workflow with this id was ever started."""
    try:
        await describe_state(client, task_id)
    except NotFoundError:
        return False
    return True


async def task_status(
    client: Client, task_id: str, timeout_s: float = QUERY_TIMEOUT_S
) -> TaskStatus:
    """Current status: by query while running, from the result once completed.

    A cancelled, terminated or failed workflow has no result; a worker still answers the
    status query by replaying its history, so its log and last gates stay visible.
    """
    from semspec.workflow.task.messages import TaskResult

    state = await describe_state(client, task_id)
    handle = _handle(client, task_id)
    if state == "completed":
        typed = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
        result: TaskResult = await typed.result()
        return result.status
    if state == "running":
        try:
            return await _query(handle, timeout_s)
        except TimeoutError:
            raise StatusQueryTimeout(
                f"task {task_id} did not answer within {timeout_s:.0f}s",
                hint="is a worker running? start one with `semspec up` or `semspec worker`",
            ) from None
        except RPCError as err:
            # e.g. a workflow task that keeps failing on the worker: the query cannot run.
            # (A query that fails while the task starts is WorkflowQueryFailedError: callers
            # that poll wait that out.)
            raise SemspecError(
                f"task {task_id} cannot report its status: {err}",
                hint="the worker's log (.semspec/run/logs/worker.log) says why its workflow "
                "task fails",
            ) from None
    return await _closed_status(handle, task_id, state)


async def _query(handle: WorkflowHandle[Any, Any], timeout_s: float) -> TaskStatus:
    from semspec.workflow.task.messages import TaskStatus

    status: TaskStatus = await asyncio.wait_for(
        handle.query(QUERY_STATUS, result_type=TaskStatus), timeout_s
    )
    return status


async def _closed_status(handle: WorkflowHandle[Any, Any], task_id: str, state: str) -> TaskStatus:
    """The last status of a workflow that closed without a result (cancelled, terminated...)."""
    from semspec.workflow.task.messages import TaskStatus

    try:
        status = await _query(handle, CLOSED_QUERY_TIMEOUT_S)
    except Exception:  # no worker to replay it, or its code changed: say what Temporal knows
        status = TaskStatus(task_id, "", "done", 0, 0, 0)
    status.phase, status.pending_escalation = "done", None
    status.outcome = status.outcome or state
    if not status.reason:
        try:
            await handle.result()
        except WorkflowFailureError as err:
            status.reason = str(err.cause) if err.cause else str(err)
        except Exception as err:
            status.reason = str(err)
    return status


def _list_row(wf_state: str, listing: TaskListing | None) -> tuple[str, str]:
    """State and phase columns: escalated tasks as such, completed ones by their outcome."""
    if listing is None:
        return wf_state, "unknown" if wf_state in ("running", "completed") else wf_state
    phase = listing.phase
    if wf_state == "running":
        return ("escalated" if phase == "escalated" else "running"), phase
    outcome = listing.outcome or wf_state
    if wf_state == "completed":
        return ("completed" if outcome == "approved" else "failed"), outcome
    return wf_state, outcome


def _list_query(wanted: str | None) -> str:
    """The visibility query of ``task list``: constants only, never a user's text."""
    if wanted in ("running", "escalated"):
        # Only open workflows can be either.
        return f"WorkflowType = '{TASK_WORKFLOW}' AND ExecutionStatus = 'Running'"
    return f"WorkflowType = '{TASK_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'"


async def list_tasks(
    client: Client, state: str | None = None, limit: int | None = LIST_LIMIT
) -> TaskPage:
    """The newest ``limit`` tasks (all with None); escalated and failed tasks show as such.

    Every row comes from Temporal's visibility, the task's memo (``TaskListing``) included: one
    call per page of up to ``PAGE_SIZE`` runs, and no question to any worker, so the cost does
    not grow with each task's history and the list answers with no worker running. A task that
    checkpointed ran as several workflow runs (continue-as-new); only its latest run is listed.
    """
    from semspec.workflow.task.listing import read_listing

    wanted = check_state(state)
    rows: list[TaskSummary] = []
    listings: dict[str, TaskListing] = {}
    seen: set[str] = set()
    # One more than asked for: the page then also says whether more tasks exist.
    page_size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit + 1)
    async for wf in client.list_workflows(_list_query(wanted), page_size=page_size):
        if wf.id in seen:
            continue
        seen.add(wf.id)
        listing = await read_listing(wf)
        shown, phase = _list_row(state_name(wf.status), listing)
        if wanted and wanted not in (shown, phase):
            continue
        if limit is not None and len(rows) >= limit:
            return await _with_land(client, TaskPage(rows, more=True, listings=listings))
        started = wf.start_time.isoformat(timespec="seconds") if wf.start_time else ""
        title, iteration = (listing.title, listing.iteration) if listing else ("", 0)
        task_id = task_id_of(wf.id)
        rows.append(TaskSummary(task_id, shown, title, phase, iteration, started))
        if listing is not None:
            listings[task_id] = listing
    return await _with_land(client, TaskPage(rows, more=False, listings=listings))


async def _with_land(client: Client, page: TaskPage) -> TaskPage:
    """``page`` with each row's land state and the tasks it waits on: the page's lands are
    read in one more visibility call, only when an approved task is on it (docs/landing.md)."""
    if not page.rows:
        return page  # an empty list imports no land code (tests/cli/test_cli_imports.py)
    from semspec.client.land_listing import land_states, listed_land, listed_waits

    approved = [row for row in page.rows if row.phase == "approved"]
    lands: dict[str, dict[str, str]] = {}
    if approved:
        since = min((row.started for row in approved), default="")
        lands = await land_states(client, datetime.fromisoformat(since) if since else None)
    for row in page.rows:
        listing = page.listings.get(row.task_id)
        row.land = listed_land(row.task_id, row.phase == "approved", listing, lands)
        row.waiting_on = listed_waits(listing)
    return page


async def running_listings(client: Client) -> dict[str, TaskListing]:
    """The memo of every running task by task id, from visibility in one call per page."""
    from semspec.workflow.task.listing import read_listing

    found: dict[str, TaskListing] = {}
    async for wf in client.list_workflows(_list_query("running"), page_size=PAGE_SIZE):
        listing = await read_listing(wf)
        if listing is not None:
            found.setdefault(task_id_of(wf.id), listing)
    return found


async def find_task(client: Client, ident: str) -> tuple[str, str | None]:
    """The task an id names, and the escalation id when ``ident`` is one (``<task>-<n>``).

    A task id wins over an escalation id, so a task named ``fix-bug-2`` is never read as
    escalation 2 of ``fix-bug``.
    """
    if await task_exists(client, ident):
        return ident, None
    head, _, tail = ident.rpartition("-")
    if head and tail.isdigit() and await task_exists(client, head):
        return head, ident
    raise NotFoundError(
        "task or escalation",
        ident,
        hint="list them with `semspec escalations list` or `semspec task list`",
    )


def check_pending(status: TaskStatus, escalation_id: str | None) -> None:
    """An InputError unless the task waits on an escalation (the one named, when named)."""
    esc = status.pending_escalation
    state = status.outcome or status.phase
    if esc is None:
        raise InputError(
            f"task {status.task_id} is not escalated (state: {state})",
            hint=f"see `semspec task status {status.task_id}`",
        )
    if escalation_id is not None and esc.escalation_id != escalation_id:
        raise InputError(
            f"escalation {escalation_id} is not pending; task {status.task_id} waits on "
            f"{esc.escalation_id}",
            hint=f"see it with `semspec escalations show {esc.escalation_id}`",
        )


async def cancel(client: Client, task_id: str) -> None:
    """Request cancellation; the workflow records it and stops at once."""
    state = await describe_state(client, task_id)
    if state != "running":
        raise InputError(
            f"task {task_id} is not running (its workflow is {state})",
            hint=f"see how it ended with `semspec task status {task_id}`",
        )
    await _handle(client, task_id).cancel()


async def resolve(
    client: Client,
    task_id: str,
    resolution: Resolution,
    owner: OwnerKey,
    escalation_id: str | None = None,
) -> ResolutionAck:
    """Answer the pending escalation (only ``escalation_id`` when given), signed by ``owner``
    for that one question; the workflow validates."""
    from semspec.workflow.task.messages import ResolutionAck

    state = await describe_state(client, task_id)
    if state != "running":
        raise InputError(
            f"task {task_id} is not escalated (its workflow is {state})",
            hint=f"see how it ended with `semspec task status {task_id}`",
        )
    status = await task_status(client, task_id, ANSWER_QUERY_TIMEOUT_S)
    check_pending(status, escalation_id)
    assert status.pending_escalation is not None
    signed = resolution.signed_by(owner, status.pending_escalation)
    try:
        ack: ResolutionAck = await _handle(client, task_id).execute_update(
            UPDATE_RESOLVE, signed, result_type=ResolutionAck
        )
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        message = getattr(cause, "message", None) or str(cause or err)
        raise InputError(message, hint=f"see `semspec task status {task_id}`") from None
    return ack


async def wait_result(client: Client, task_id: str) -> TaskResult:
    """Block until the task's workflow closes."""
    from semspec.workflow.task.messages import TaskResult

    typed = client.get_workflow_handle(task_workflow_id(task_id), result_type=TaskResult)
    result: TaskResult = await typed.result()
    return result
