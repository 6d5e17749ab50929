"""Shared state of one CLI invocation: the target repository and its config."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from semspec.cli.terminal_text import TerminalConsole

if TYPE_CHECKING:
    from semspec.core.config import SemspecConfig


def find_repo(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``.semspec/`` or ``.git``."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".semspec").is_dir() or (candidate / ".git").exists():
            return candidate
    return start


@dataclass
class CliContext:
    """The repository a command acts on; the config is loaded on first use."""

    repo: Path
    # Both strip control sequences from what they print: much of it is untrusted text.
    console: Console = field(default_factory=TerminalConsole)
    err: Console = field(default_factory=lambda: TerminalConsole(stderr=True))
    _config: SemspecConfig | None = None

    @property
    def config(self) -> SemspecConfig:
        if self._config is None:
            # Imported here: pydantic's config models cost more than `--help` takes in total.
            from semspec.core.config import load_config

            self._config = load_config(self.repo)
        return self._config


def cli_context(ctx: typer.Context) -> CliContext:
    """The ``CliContext`` set up by the root callback (or a default for the cwd)."""
    obj = ctx.find_root().obj
    if isinstance(obj, CliContext):
        return obj
    repo = Path(os.environ.get("SEMSPEC_REPO") or Path.cwd())
    return CliContext(find_repo(repo))
