"""Command help as a terminal shows it: each docstring paragraph one flowing line.

Typer keeps a docstring's single line breaks after its first paragraph, so a paragraph wrapped
at 100 columns in the source breaks mid-sentence in a narrower terminal; and it prints RST's
double backquotes as they are. ``reflow_help`` gives every command of the app its docstring
with each paragraph joined into one line (rich wraps it to the terminal) and ``x`` as `x`,
as the other help texts write code. A paragraph starting with ``\\b`` keeps its lines (click's
own marker for text that must not be rewrapped).
"""

from __future__ import annotations

import inspect

import typer

NO_REWRAP = "\b"


def reflow(text: str) -> str:
    """``text`` with each paragraph on one line and RST's ``code`` written `code`."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    flowed = [
        p if p.startswith(NO_REWRAP) else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    ]
    return "\n\n".join(flowed).replace("``", "`")


def reflow_help(app: typer.Typer) -> None:
    """Reflow the help of every command and group of ``app``, sub-apps included."""
    for command in app.registered_commands:
        text = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if text:
            command.help = reflow(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
