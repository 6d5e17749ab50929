"""The board (``/``): every task by phase, with its plan, iteration, retries, context pressure
and cost; ``static/console.js`` keeps the rows current from the live feed."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from temporalio.service import RPCError

from semspec.console.board_rows import BOARD_COLUMNS, BoardRow, board_rows
from semspec.console.monitor_data import latest_signal_by_task
from semspec.console.state import ConsoleState
from semspec.core.errors import SemspecError

SIGNALS_TIMEOUT_S = 3.0


def routes() -> list[BaseRoute]:
    """The board's route."""
    return [Route("/", board, name="board")]


async def _latest_signals(state: ConsoleState) -> dict[str, str]:
    """Each task's newest stored signal as its row shows it (``level: reason``); none when NATS
    does not answer (the board still lists the tasks)."""
    try:
        js = (await state.nats()).jetstream()
        latest = await asyncio.wait_for(latest_signal_by_task(js), SIGNALS_TIMEOUT_S)
    except Exception:  # NATS down or slow: the live feed fills the cells once it is back
        return {}
    return {task: f"{signal.level}: {signal.reason}" for task, signal in latest.items()}


async def board(request: Request) -> Response:
    """Every task, grouped by the board's sections; 503 with the reason when Temporal does not
    answer (the live feed still fills the board as tasks report)."""
    state: ConsoleState = request.app.state.console
    rows: list[BoardRow] = []
    problem = ""
    signals = asyncio.create_task(_latest_signals(state))
    try:
        rows = await board_rows(await state.temporal(), state.closed_rows)
    except SemspecError as exc:
        problem = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    except RPCError as exc:
        problem = f"Temporal answered: {exc.message}"
    groups = {column: [row for row in rows if row.column == column] for column in BOARD_COLUMNS}
    context = {"active": "board", "groups": groups, "problem": problem, "signals": await signals}
    return state.render(request, "board.html", context, status=503 if problem else 200)
