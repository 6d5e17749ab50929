"""A table written to a pipe is laid out as rich lays out a table with no box, without rich's
cost per cell (``task list --all`` of 500 tasks), and its cells are text, never markup."""

from __future__ import annotations

import io

from rich.table import Table

from semspec.cli.output import print_table
from semspec.cli.terminal_text import TerminalConsole

COLUMNS = ["task", "state", "title"]


def _printed(rows: list[tuple[object, ...]]) -> str:
    out = io.StringIO()
    print_table(TerminalConsole(file=out), None, COLUMNS, rows)
    return out.getvalue()


def _rich_layout(rows: list[tuple[object, ...]]) -> str:
    out = io.StringIO()
    table = Table(box=None)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    TerminalConsole(file=out).print(table)
    return out.getvalue()


def test_piped_rows_are_laid_out_as_rich_lays_them_out() -> None:
    rows: list[tuple[object, ...]] = [
        ("fix-1", "running", "add sub()"),
        ("a-much-longer-task-id", None, "漢字 and ü, e\u0301"),
        ("x", "escalated", 3),
    ]
    assert _printed(rows) == _rich_layout(rows)
    assert _printed([]) == _rich_layout([])


def test_a_piped_cell_is_text_not_markup_and_stays_on_its_line() -> None:
    printed = _printed([("t", "running", "[bold]keep[/bold] the\nbrackets\x1b[31m")])
    assert printed.splitlines()[1].split(None, 2)[2].rstrip() == "[bold]keep[/bold] the brackets"
    assert len(printed.splitlines()) == 2
