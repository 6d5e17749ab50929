"""What every gate-output reader shares: file names made relative to the worktree, and one
item built with its message cut to a size a prompt or a page can hold."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semspec.workflow.gates.types import GateItem

MAX_MESSAGE_CHARS = 300
"""A finding's message is cut here: items go into prompts and pages."""


@dataclass(frozen=True)
class Paths:
    """Where the gate ran: file names are shown relative to ``root`` (the worktree)."""

    root: Path
    cwd: Path

    def relative(self, name: str) -> str:
        """``name`` (absolute, or relative to ``cwd``) relative to ``root`` when inside it."""
        if not name:
            return ""
        path = Path(name)
        full = path if path.is_absolute() else self.cwd / path
        rel = os.path.relpath(os.path.normpath(full), self.root)
        return name if rel.startswith("..") else Path(rel).as_posix()


def make_item(path: str, line: Any, rule: str, message: str, test: str = "") -> GateItem:
    """One item; ``message`` on one line and cut at ``MAX_MESSAGE_CHARS``, ``line`` 0 unless
    a positive int."""
    text = " ".join(str(message).split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    number = line if isinstance(line, int) and line > 0 else 0
    return GateItem(path=path, line=number, rule=rule, message=text, test=test)
