"""Output helpers: JSON for scripts, tables for people."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def print_json(console: Console, data: Any) -> None:
    """Print ``data`` as JSON with sorted keys, unstyled so scripts can parse it."""
    console.file.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def print_table(
    console: Console, title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Print a simple table."""
    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(table)
