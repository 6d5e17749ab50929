"""The board (``/``): every task by phase, with its plan, iteration, retries, context pressure
and cost; ``static/console.js`` keeps the rows current from the live feed."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from temporalio.service import RPCError

from semspec.console.board_rows import BOARD_COLUMNS, BoardRow, board_rows
from semspec.console.state import ConsoleState
from semspec.core.errors import SemspecError


def routes() -> list[BaseRoute]:
    """The board's route."""
    return [Route("/", board, name="board")]


async def board(request: Request) -> Response:
    """Every task, grouped by the board's sections; 503 with the reason when Temporal does not
    answer (the live feed still fills the board as tasks report)."""
    state: ConsoleState = request.app.state.console
    rows: list[BoardRow] = []
    problem = ""
    try:
        rows = await board_rows(await state.temporal())
    except SemspecError as exc:
        problem = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    except RPCError as exc:
        problem = f"Temporal answered: {exc.message}"
    groups = {column: [row for row in rows if row.column == column] for column in BOARD_COLUMNS}
    context = {"active": "board", "groups": groups, "problem": problem}
    return state.render(request, "board.html", context, status=503 if problem else 200)
