"""A gate whose program is not installed is a configuration error, not a failing change.

``/bin/sh: 1: ruff: not found`` (exit 127) says nothing about the agent's work, and no retry
of the developer can fix it: counted as a failure (or, for an optional gate, a warning) it
came back in every iteration. ``refuse_missing_tools`` turns it into one ``GateError`` naming
the gate and the program, which fails the task with that message (issue 29).

Only a bare program name counts: ``./check.sh: not found`` may be the change's own doing (a
deleted script), so it stays an ordinary failure the developer sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from semspec.core.errors import GateError
from semspec.workflow.gates.types import GateResult

COMMAND_NOT_FOUND = 127
"""The shell's exit status for a command it could not find (POSIX)."""

# dash: "/bin/sh: 1: ruff: not found"; bash: "bash: line 1: ruff: command not found".
_NOT_FOUND = re.compile(r"(?:^|: )(?P<tool>[^\s:/]+): (?:command )?not found\s*$", re.MULTILINE)


@dataclass(frozen=True)
class MissingTool:
    """A gate that could not find its program."""

    gate: str
    tool: str
    line: str
    """The shell's own words."""


def missing_tool(result: GateResult) -> MissingTool | None:
    """The program ``result``'s shell could not find, when that is why the gate ended."""
    if result.passed or result.exit_code != COMMAND_NOT_FOUND:
        return None
    found = list(_NOT_FOUND.finditer(result.output))
    if not found:
        return None
    last = found[-1]
    line = result.output[result.output.rfind("\n", 0, last.start()) + 1 : last.end()].strip()
    return MissingTool(result.name, last.group("tool"), line)


def refuse_missing_tools(results: list[GateResult]) -> None:
    """``GateError`` naming each gate whose program is not installed, if there is one."""
    missing = [m for m in map(missing_tool, results) if m is not None]
    if not missing:
        return
    named = "; ".join(f"gate {m.gate!r} needs {m.tool!r} ({m.line})" for m in missing)
    first = missing[0]
    raise GateError(
        f"program not found where gates run: {named}. This is the setup, not the change: "
        "the task stops here instead of failing the gate in every iteration",
        gate=first.gate,
        hint=f"install {first.tool} in the environment `semspec up` runs in (its PATH or "
        "virtual environment), or change or turn off the gate in .semspec/config.yaml "
        f"(gates.overrides.{first.gate} for a preset's gate)",
    )
