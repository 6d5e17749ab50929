"""The board (``/``): every task by phase, with its plan, iteration, retries, context pressure
and cost; ``static/console.js`` keeps the rows current from the live feed."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from semspec.console.board_rows import BOARD_COLUMNS, board_rows
from semspec.console.state import ConsoleState


def routes() -> list[BaseRoute]:
    """The board's route."""
    return [Route("/", board, name="board")]


async def board(request: Request) -> Response:
    """Every task, grouped by the board's columns."""
    state: ConsoleState = request.app.state.console
    rows = await board_rows(await state.temporal())
    groups = {column: [row for row in rows if row.column == column] for column in BOARD_COLUMNS}
    return state.render(request, "board.html", {"active": "board", "groups": groups})
