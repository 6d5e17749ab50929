"""The knowledge page (``/knowledge``): the SOPs with their ``applies_to`` globs, severity and
the tracked files each applies to; the conventions reviews taught; the decisions approved tasks
recorded (``knowledge_data``: graph queries with every value bound, run in a worker thread).

Hooks for tests and scripts (stable): ``#sops`` with ``<tr data-sop-id="ID"
data-severity="S" data-matches="N" data-origin="KIND">`` (``sop`` or a rule-file
kind such as ``agents_md``), ``#conventions`` with ``<tr data-convention="NAME">``,
``#decisions`` with ``<tr data-task-id="TASK">``.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from semspec.console.knowledge_data import SHOWN_MATCHES, Knowledge, gather
from semspec.console.stack_problem import stack_problem
from semspec.console.state import ConsoleState
from semspec.core.errors import SemspecError


def routes() -> list[BaseRoute]:
    """The knowledge page's route."""
    return [Route("/knowledge", knowledge, name="knowledge")]


async def knowledge(request: Request) -> Response:
    """SOPs, conventions and decisions from the stack's graph."""
    state: ConsoleState = request.app.state.console
    found: Knowledge | None = None
    problem = ""
    try:
        found = await anyio.to_thread.run_sync(_read, state)
    except SemspecError as exc:
        problem = stack_problem(exc)
    context = {"active": "knowledge", "k": found, "problem": problem, "shown": SHOWN_MATCHES}
    return state.render(request, "knowledge.html", context, status=503 if problem else 200)


def _read(state: ConsoleState) -> Knowledge:
    store = state.graph()
    try:
        return gather(store, state.repo)
    finally:
        store.close()
