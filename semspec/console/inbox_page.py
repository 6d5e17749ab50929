"""The inbox (``/inbox``): every escalation waiting for a human, with its evidence (the failed
gates' output), the grounded question and the suggested actions, and a form to answer it.

An answer POSTs to ``/inbox`` and does what ``semspec escalations resolve`` does, through the
same code: ``client.escalations.answer`` checks it, ``client.task_client.find_task`` and
``resolve`` send it, signed with the stack owner's key from the run folder for that one
question. The page then redirects back (303) with a note saying what happened; an answer to a
question already answered says so instead of answering the next one.

Hooks for tests and scripts (stable): one ``<article data-escalation-id="ID"
data-task-id="TASK">`` per escalation (``id="esc-ID"``), its question in ``.question``, failed
gates in ``<pre class="gate-output">``; the answer form's buttons are ``<button name="action"
value="retry|approve|abort|extend_budget">``, one per row of ``resolution_actions.ACTIONS``, its
fields ``guidance``, ``extra_retries`` and ``extra_usd``; the note after an answer is ``#note``
(``data-ok="true|false"``).
"""

from __future__ import annotations

import math
import secrets
from collections import OrderedDict
from dataclasses import dataclass

import anyio.to_thread
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from semspec.client.escalations import answer, open_escalations
from semspec.client.task_client import find_task, resolve
from semspec.client.task_render import gate_tail
from semspec.console.forms import read_form
from semspec.console.stack_problem import STACK_ERRORS, stack_problem
from semspec.console.state import ConsoleState
from semspec.console.task_timeline import latest_gates
from semspec.core.errors import InputError
from semspec.core.owner_key import load_owner_key
from semspec.vocabulary.resolution_actions import ACTIONS

MAX_NOTES = 64
"""Notes kept for redirects not yet followed; the oldest goes first."""


@dataclass(frozen=True)
class Note:
    """What became of an answer, shown once on the page the answer redirects to."""

    ok: bool
    text: str


def routes() -> list[BaseRoute]:
    """The inbox and its answer."""
    return [
        Route("/inbox", inbox, name="inbox", methods=["GET"]),
        Route("/inbox", answer_escalation, name="inbox_answer", methods=["POST"]),
    ]


async def inbox(request: Request) -> Response:
    """Every open escalation with its evidence, question, suggested actions and answer form."""
    state: ConsoleState = request.app.state.console
    note = _notes(request).pop(request.query_params.get("note", ""), None)
    problem = ""
    try:
        found = await open_escalations(await state.temporal())
    except STACK_ERRORS as exc:
        found, problem = [], stack_problem(exc)
    # Each with its failed gates, and where their full logs are served.
    rows = [(e, [g for g in latest_gates(e.status) if not g.result.passed]) for e in found]
    context = {
        "active": "inbox",
        "rows": rows,
        "note": note,
        "problem": problem,
        "tail": gate_tail,
        "answer_actions": ACTIONS,  # one button per action the workflow takes
    }
    return state.render(request, "inbox.html", context, status=503 if problem else 200)


async def answer_escalation(request: Request) -> Response:
    """Answer one escalation as ``semspec escalations resolve`` would; back to the inbox."""
    state: ConsoleState = request.app.state.console
    form = await read_form(request)
    ident = _text(form, "escalation_id")
    try:
        resolution = answer(
            _text(form, "action"),
            _text(form, "guidance") or None,
            _count(form, "extra_retries"),
            _dollars(form, "extra_usd"),
        )
        # Only the stack's owner may answer: the workflow checks this key's signature.
        owner = await anyio.to_thread.run_sync(load_owner_key, state.config, state.repo)
        client = await state.temporal()
        task_id, escalation_id = await find_task(client, ident)
        ack = await resolve(client, task_id, resolution, owner, escalation_id)
        note = Note(True, f"answered {ack.escalation_id} of task {task_id} with {ack.action}")
    except STACK_ERRORS as exc:
        note = Note(False, f"not answered: {stack_problem(exc)}")
    return RedirectResponse(f"/inbox?note={_keep(request, note)}", status_code=303)


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _count(form: FormData, name: str) -> int:
    text = _text(form, name) or "0"
    if not (text.isascii() and text.isdigit()):
        raise InputError(f"{name.replace('_', ' ')} must be a whole number of 0 or more")
    return int(text)


def _dollars(form: FormData, name: str) -> float:
    text = _text(form, name) or "0"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{name.replace('_', ' ')} must be a number of US dollars, 0 or more")
    return value


def _notes(request: Request) -> OrderedDict[str, Note]:
    # Kept on the app (one console, one set), keyed by a random id: the redirect's address
    # names a note but cannot write one, so no link can put words on the page.
    notes: OrderedDict[str, Note] | None = getattr(request.app.state, "inbox_notes", None)
    if notes is None:
        notes = OrderedDict()
        request.app.state.inbox_notes = notes
    return notes


def _keep(request: Request, note: Note) -> str:
    notes = _notes(request)
    key = secrets.token_urlsafe(12)
    notes[key] = note
    while len(notes) > MAX_NOTES:
        notes.popitem(last=False)
    return key
