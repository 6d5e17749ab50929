"""What ``semspec/cli/terminal_text.py`` removes from text before a terminal sees it; the
whole path through the CLI is ``tests/security/test_untrusted_text.py``."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from semspec.cli.terminal_text import TerminalConsole, strip_controls


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain, é, 日本, tab\there\nnext", "plain, é, 日本, tab\there\nnext"),
        ("a\x1b[2J\x1b[1;1Hb\x1b[31mc\x1b[0m", "abc"),  # CSI: clear, move, colour
        ("a\x1b]52;c;UFdORUQ=\x07b", "ab"),  # OSC 52 ended by BEL
        ("\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 ended by ST
        ("a\x9b31mb\x9d0;title\x9cc", "abc"),  # 8-bit CSI and OSC
        ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),  # DCS (sixel)
        ("a\x1b7b\x1b8c\x1bcd", "abcd"),  # save/restore cursor, reset
        ("a\x1b]52;c;cut-off", "a"),  # an OSC never ended takes the rest
        ("bell\x07 back\x08 cr\r nul\x00 del\x7f", "bell back cr nul del"),
        ("x\u202eexe.txt\u202c y\u2066z\u2069", "xexe.txt yz"),  # bidi overrides, isolates
    ],
)
def test_strip_controls(text: str, shown: str) -> None:
    assert strip_controls(text) == shown


def test_the_console_strips_strings_and_table_cells_but_keeps_its_own_styles() -> None:
    out = io.StringIO()
    console = TerminalConsole(file=out, force_terminal=True, width=80)
    console.print("gate \x1b]52;c;eA==\x07said", markup=False)
    console.print("[bold]ok[/bold]")
    table = Table(title="t\x1b[2J")
    table.add_column("cell")
    table.add_row("x\x1b]8;;http://e/\x1b\\y")
    console.print(table)
    text = out.getvalue()
    assert "gate said" in text and "xy" in text
    assert "\x1b[1mok\x1b[0m" in text  # rich's own bold
    assert "\x1b]" not in text and "\x07" not in text and "\x1b[2J" not in text
