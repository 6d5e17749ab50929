"""Output helpers: JSON for scripts, tables for people."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from semspec.cli.terminal_text import strip_controls

_UNBOUNDED = 1_000_000


def print_json(console: Console, data: Any) -> None:
    """Print ``data`` as JSON with sorted keys, unstyled so scripts can parse it."""
    console.file.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def print_text(console: Console, text: str) -> None:
    """Write ``text`` as it is (no markup, no wrapping) without terminal control sequences: it
    holds what others wrote (SOPs, code, diffs)."""
    console.file.write(strip_controls(text))


def print_table(
    console: Console,
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    wide: bool = False,
) -> None:
    """Print a table whose cells are never cut: too long for the terminal, they fold.

    ``wide`` prints every row on one line, however wide that makes the table (for copying
    ids or piping into other tools). Written to a pipe or a file the table is plain rows,
    columns apart by spaces, with no box drawing, and never folds (``TerminalConsole``).
    """
    plain = not console.is_terminal
    if plain and title is None:
        console.file.write(_plain_rows(columns, rows))
        return
    table = Table(title=title, show_lines=False, box=None if plain else box.HEAVY_HEAD)
    for column in columns:
        # Ellipsis would cut task and escalation ids that people copy into the next command.
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    if not wide:
        console.print(table)
        return
    natural = console.measure(table, options=console.options.update_width(_UNBOUNDED)).maximum
    saved = console.width
    console.width = max(saved, natural)
    try:
        console.print(table)
    finally:
        console.width = saved


def _plain_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The table as rich lays it out with no box (a space each side of every cell, columns as
    wide as their widest cell), written directly: rich takes most of a second to lay out the
    500 rows of ``task list --all`` (bench/lists.py). Cells are text, never markup, and a
    newline or tab in one becomes a space, so each row stays one line."""
    blank = [""] * len(columns)
    table = [[_cell(c) for c in columns]]
    table += [([_cell(c) for c in row] + blank)[: len(columns)] for row in rows]
    widths = [max(cell_len(line[i]) for line in table) for i in range(len(columns))]
    return "".join(_plain_line(line, widths) for line in table)


def _plain_line(cells: list[str], widths: list[int]) -> str:
    pairs = zip(cells, widths, strict=True)
    return "".join(f" {cell}{' ' * (width - cell_len(cell))} " for cell, width in pairs) + "\n"


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return strip_controls(text).replace("\n", " ").replace("\t", " ")
