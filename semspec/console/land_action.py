"""The task page's **Land** button (``POST /tasks/{task_id}/land``): lands an approved task as
``semspec task land`` does, through the same code, and says what became of it on the task page.

``client.land_client.land_input`` checks the task is approved and makes the input from the
console's config (the required gates included); ``start_land`` signs all of it with the owner's
key from the run folder (ADR 0004), as the CLI signs it, and starts (or joins) the land on the
stack's worker. The answer waits for the land's end up to ``WAIT_S`` and redirects (303) to the
task page with a note holding the CLI's own words (``client.land_text.result_lines``): landed at
a commit, or why not (a dirty checkout, a conflict naming its files, a failed gate with its
output) with the hint. A land that takes longer goes on; the page then shows it queued.

``auth.ConsoleAccess`` refused a request without the session cookie or from another origin
before it gets here, and ``forms.read_form`` checks the origin again.

Hooks for tests and scripts (stable): the form ``#land-form`` with ``<button name="action"
value="land">``; the note ``#land-note`` (``data-ok="true|false"``) with one ``<p>`` per line.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from temporalio.client import WorkflowFailureError

from semspec.client.land_client import land_input, land_state, start_land
from semspec.client.land_listing import listed_waits
from semspec.client.land_text import result_lines, status_line
from semspec.console.forms import read_form
from semspec.console.stack_problem import STACK_ERRORS, stack_problem
from semspec.console.state import ConsoleState
from semspec.core.owner_key import load_owner_key
from semspec.workflow.land.landing import ALREADY_LANDED, LANDED
from semspec.workflow.task.messages import TaskStatus

WAIT_S = 120.0
"""How long the answer waits for the land (gates included) before it shows the task queued."""
MAX_NOTES = 64
"""Notes kept for redirects not yet followed; the oldest goes first."""
CAN_LAND = ("approved", "land failed")
"""Land states with a Land button: not landed yet, or a land that did not land (tried again,
as ``task land`` may be)."""


@dataclass(frozen=True)
class LandNote:
    """What became of a press of Land, shown once on the task page it redirects to."""

    ok: bool
    lines: tuple[str, ...]


def routes() -> list[BaseRoute]:
    """The Land button's action."""
    return [Route("/tasks/{task_id}/land", land_task, name="task_land", methods=["POST"])]


async def land_task(request: Request) -> Response:
    """Land the task as ``semspec task land ID`` would; back to its page with what happened."""
    state: ConsoleState = request.app.state.console
    task_id = request.path_params["task_id"]
    await read_form(request)  # the origin check; the form has no field the land reads
    try:
        # Only the stack's owner may land: the workflow and the worker check this signature.
        owner = await anyio.to_thread.run_sync(load_owner_key, state.config, state.repo)
        client = await state.temporal()
        inp = await land_input(
            client, state.config, state.repo, task_id, strategy="rebase", push_remote=""
        )
        handle = await start_land(client, state.config.services.temporal.task_queue, inp, owner)
        result = await asyncio.wait_for(asyncio.shield(handle.result()), WAIT_S)
        landed = result.outcome in (LANDED, ALREADY_LANDED)
        note = LandNote(landed, tuple(result_lines(task_id, inp.base_branch, result)))
    except TimeoutError:
        note = LandNote(True, (f"the land of {task_id} goes on; this page shows it queued",))
    except WorkflowFailureError as exc:
        note = LandNote(False, (f"not landed: {exc.cause or exc}",))
    except STACK_ERRORS as exc:
        note = LandNote(False, (f"not landed: {stack_problem(exc)}",))
    key = _keep(request, note)
    return RedirectResponse(f"/tasks/{quote(task_id, safe='')}?land_note={key}", status_code=303)


async def land_view(
    request: Request, client: Any, status: TaskStatus, base_branch: str
) -> dict[str, Any]:
    """What the task page shows of its land: the state (its own when the loop keeps one, else
    its land workflow's), the line ``task status`` prints, whether to offer Land, the tasks it
    waits on, and the note of a Land just pressed."""
    own = getattr(status, "land", None)  # TaskStatus.land, when the loop keeps it
    land, problem = own if isinstance(own, dict) else None, ""
    if land is None:
        try:
            land = await land_state(client, status.task_id, status.outcome)
        except STACK_ERRORS as exc:
            problem = f"where its land is cannot be read: {stack_problem(exc)}"
    note = _notes(request).pop(request.query_params.get("land_note", ""), None)
    return {
        "land": land,
        "land_line": status_line(status.task_id, land) if land else problem,
        "can_land": land is not None and land.get("state") in CAN_LAND,
        "waiting_on": listed_waits(status),
        "land_note": note,
        "land_base": base_branch,
    }


def _notes(request: Request) -> OrderedDict[str, LandNote]:
    # On the app (one console), keyed by a random id: the redirect's address names a note but
    # cannot write one, so no link can put words on the page (as the inbox's notes).
    notes: OrderedDict[str, LandNote] | None = getattr(request.app.state, "land_notes", None)
    if notes is None:
        notes = OrderedDict()
        request.app.state.land_notes = notes
    return notes


def _keep(request: Request, note: LandNote) -> str:
    notes = _notes(request)
    key = secrets.token_urlsafe(12)
    notes[key] = note
    while len(notes) > MAX_NOTES:
        notes.popitem(last=False)
    return key
