"""Go's form of testing the wrong code: a ``replace`` directive naming a folder outside the
worktree (issue 29).

``replace example.com/app => /home/me/app`` in ``go.mod`` makes ``go test`` in the worktree
build that folder, which may be the user's own checkout, in place of the module the change
edits. A directive whose folder lies outside the worktree but inside the checkout the worktree
was made from is refused before the first gate; one naming another repository (a library the
user develops alongside) is the user's setup and stays.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from semspec.agents.tools.files import read_regular
from semspec.agents.workspace import ToolError
from semspec.core.errors import GateError
from semspec.workflow.gates.import_roots import checkout_of

_MAX_GO_MOD = 1_000_000
# `replace a => ./b`, `replace a v1 => ../b`, and the lines of a `replace ( ... )` block.
_REPLACE = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s*=>\s*(\S+)(?:\s+\S+)?\s*$")


def local_replaces(go_mod: str) -> list[tuple[str, str]]:
    """(module, folder) of each ``replace`` in ``go_mod`` whose target is a local folder."""
    found: list[tuple[str, str]] = []
    in_block = False
    for raw in go_mod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("replace") and line.rstrip().endswith("("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        if not (in_block or line.startswith("replace ")):
            continue
        match = _REPLACE.match(line)
        if match is None:
            continue
        module, target = match.groups()
        # Go reads a target as a folder when it is a path: absolute, or starting ./ or ../
        if target.startswith(("/", "./", "../")):
            found.append((module, target))
    return found


def check_go_replaces(worktree: Path, gate: str = "gates") -> None:
    """``GateError`` when ``go.mod`` in the worktree replaces a module with a folder of the
    checkout the worktree belongs to (the user's repository) outside the worktree; blocking."""
    root = os.path.realpath(worktree)
    checkout = checkout_of(worktree)
    if checkout is None:
        return
    try:
        text = read_regular(Path(root) / "go.mod", "go.mod", _MAX_GO_MOD).decode("utf-8", "replace")
    except ToolError:
        return
    for module, target in local_replaces(text):
        real = os.path.realpath(os.path.join(root, target))
        inside_worktree = real == root or real.startswith(root + os.sep)
        inside_checkout = real == checkout or real.startswith(checkout + os.sep)
        if inside_checkout and not inside_worktree:
            raise GateError(
                f"go.mod replaces {module} with {target}, which is the user's checkout "
                f"({real}), not the worktree {root}: the gates would build other code than "
                "the change, so none was run",
                gate=gate,
                hint="point the replace directive at a folder inside the repository with a "
                "relative path (./...), or drop it",
            )
