"""What `--help` tells a user: each command's summary fits the command list, and the commands
that show dollars say so."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from semspec.cli.app import app


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """Every command under ``command`` (a click command as typer builds it), with its path."""
    yield " ".join(path), command
    if isinstance(command, TyperGroup):
        context = command.make_context(path[-1], ["--help"], resilient_parsing=True)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), (*path, name))


def test_every_command_summary_is_one_line_so_the_command_list_does_not_break_it() -> None:
    # The command list prints the help's first paragraph with its line breaks kept.
    commands = dict(_commands(get_command(app), ("semspec",)))
    broken = [
        name
        for name, command in commands.items()
        if "\n" in inspect.cleandoc(command.help or "").split("\n\n")[0]
    ]
    assert "semspec monitor replay" in commands
    assert broken == []


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["task", "status"], "against the task's budget"),
        (["plan", "status"], "The plan's dollars are shown against its budget"),
        (["models", "list"], "prices with their date and source"),
    ],
)
def test_the_help_of_a_command_that_shows_dollars_names_them(
    command: list[str], words: str
) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert words in " ".join(result.stdout.replace("│", " ").split())


def test_every_help_paragraph_flows_and_shows_no_rst_markup() -> None:
    # Typer keeps a paragraph's single line breaks: in a narrower terminal the source's wrapping
    # then breaks sentences apart. semspec/cli/help_text.py joins each paragraph into one line.
    commands = dict(_commands(get_command(app), ("semspec",)))
    unflowed = [
        name
        for name, command in commands.items()
        if any("\n" in p for p in inspect.cleandoc(command.help or "").split("\n\n"))
    ]
    rst = [name for name, command in commands.items() if "``" in (command.help or "")]
    assert (unflowed, rst) == ([], [])


@pytest.mark.parametrize("command", [["task", "land"], ["task", "export"], ["task", "status"]])
def test_help_in_an_80_column_terminal_wraps_whole_lines(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    prose = result.stdout.split("╭")[0].splitlines()[2:]  # after the usage line
    assert "``" not in result.stdout
    # A line rich wrapped is nearly full; a short line followed by more text of its paragraph
    # is a break the source's own line ending made.
    for line, after in itertools.pairwise(prose):
        if line.strip() and after.strip():
            assert len(line.rstrip()) > 50, (line, after)
