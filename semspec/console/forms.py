"""Reading the form of an action (a POST from one of the console's pages).

``auth.ConsoleAccess`` already refused any state-changing request that lacks the session
cookie (``SameSite=Strict``: a browser sends it only from the console's own pages) or comes
from another origin; ``read_form`` checks the origin once more, so a handler that reads a form
this way stays safe if it is ever mounted elsewhere, and bounds what it reads.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request

from semspec.console.auth import same_origin
from semspec.console.state import ConsoleState

MAX_FIELDS = 50
MAX_FORM_BYTES = 64 * 1024
"""The largest form accepted: an answer to an escalation is a few lines of guidance."""


async def read_form(request: Request) -> FormData:
    """The request's URL-encoded form, after checking it comes from the console's own page;
    raises ``HTTPException`` (403, 413) otherwise."""
    state: ConsoleState = request.app.state.console
    if not same_origin(request.headers, state.session.origin):
        raise HTTPException(403, "refused: this action must come from the console's own page")
    length = request.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > MAX_FORM_BYTES:
        raise HTTPException(413, "form too large")
    return await request.form(max_files=0, max_fields=MAX_FIELDS)
