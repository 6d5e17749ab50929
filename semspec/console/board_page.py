"""The board (``/``): every task by phase, with its plan, iteration, retries, context pressure
and cost; ``static/console.js`` keeps the rows current from the live feed."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from semspec.console.board_filter import BoardFilter
from semspec.console.board_rows import BOARD_COLUMNS, BoardPage, BoardRow, board_page
from semspec.console.monitor_data import latest_signal_by_task
from semspec.console.stack_problem import STACK_ERRORS, stack_problem
from semspec.console.state import ConsoleState
from semspec.core.errors import InputError

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


def board_view(
    rows: list[BoardRow], wanted: BoardFilter, last_event_at: Mapping[str, str]
) -> dict[str, Any]:
    """What ``board.html`` shows of ``rows``. Every row is sent, those ``wanted`` leaves out
    hidden: the page's script filters again as one types without asking the server. A row's
    Updated time is its close, else its latest loop event the console saw, else its start."""
    shown = [row for row in rows if wanted.keeps(row)]
    return {
        "groups": {column: [r for r in rows if r.column == column] for column in BOARD_COLUMNS},
        "filter": wanted,
        "plans": sorted({row.plan_id for row in rows if row.plan_id}),
        "hidden": len(rows) - len(shown),
        "kept": {row.task_id for row in shown},
        "updated": {
            row.task_id: row.closed or last_event_at.get(row.task_id) or row.started for row in rows
        },
    }


async def board(request: Request) -> Response:
    """Every task, grouped by the board's sections; 503 with the reason when Temporal does not
    answer (the live feed still fills the board as tasks report)."""
    state: ConsoleState = request.app.state.console
    page = BoardPage([], "")
    problem, code = "", 200
    signals = asyncio.create_task(_latest_signals(state))
    try:
        # One page of rows from visibility; ``after`` is the token of the page before.
        after = request.query_params.get("after", "")
        page = await board_page(await state.temporal(), state.closed_rows, after=after)
    except STACK_ERRORS as exc:
        problem, code = stack_problem(exc), 503
    except InputError as exc:
        problem, code = exc.message, 400
    wanted = BoardFilter.from_query(request.query_params)
    context = {
        "active": "board",
        "problem": problem,
        "signals": await signals,
        "next_page": page.after,
        **board_view(page.rows, wanted, state.feed.last_event_at),
    }
    return state.render(request, "board.html", context, status=code)
