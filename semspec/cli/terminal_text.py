"""Text from outside (gate output, titles, agent summaries, escalation messages) made safe to
print on a terminal.

A terminal obeys the control sequences in what it prints: CSI moves the cursor and erases
lines (so output can hide what came before it), OSC 52 writes the clipboard, OSC 8 turns text
into a link whose target is not shown. Every string the CLI prints passes through
``TerminalConsole.render_str``, so no command has to remember it (docs/security.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from rich.text import Text

_SEQUENCES = re.compile(
    r"""
    (?:\x1b\[|\x9b)[\x20-\x3f]*[\x40-\x7e]?          # CSI: parameters, then one final byte
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])             # OSC, DCS, SOS, PM, APC: a string ...
      [^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?            # ... up to BEL or ST (or the end)
    | \x1b[\x20-\x2f]*[\x30-\x7e]?                     # any other escape sequence
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
isolates (which make a terminal show text in another order than it runs): what is left after
the sequences."""


def strip_controls(text: str) -> str:
    """``text`` without terminal control sequences or control characters (tab and newline
    stay); printable text, including any language's letters, is untouched."""
    if text.isprintable():
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


PIPE_WIDTH = 100_000
"""Line width when the output is not a terminal: wide enough that nothing wraps. Rich would use
80 columns, which splits addresses and the commands people copy out of CI logs and ``| less``;
tables take their natural width (they do not expand), so a row stays one line."""


class TerminalConsole(Console):
    """A rich ``Console`` that strips control sequences from every string it is given.

    Rich renders strings (arguments of ``print``, table cells and titles) through
    ``render_str``; its own styling is added afterwards, so colours still work. Writing to
    anything but a terminal (a pipe, a file, a CI log) it never wraps: see ``PIPE_WIDTH``.
    Rich honours ``NO_COLOR`` and prints no colour to a pipe.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kwargs.get("width") is None and not self.is_terminal:
            self.width = PIPE_WIDTH

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(strip_controls(text), *args, **kwargs)
