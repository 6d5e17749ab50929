"""Agent CLIs without a stream that are watched through a file they write as they run.

One row per CLI, keyed by its program name: where its file is and how to read it. The command
developer polls the watch off the event loop and reports its steps like a stream's, so the step
rules can stop the run between two steps (docs/providers.md, "Steps of a command agent").

- mini-swe-agent rewrites its whole trajectory after every step (``trajectory_watch``); it
  holds each call's tokens.
- Aider appends each exchange with the model to its LLM history file (``aider_history``),
  which it writes only when asked: semspec asks through ``AIDER_LLM_HISTORY_FILE``, a file in
  the task's private agent home (a scratch folder of its own when the CLI runs unfenced), never
  the worktree, unless the command names one itself. The file holds no token counts.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from semspec.agents.aider_history import (
    HISTORY_ENV,
    HISTORY_NAME,
    AiderHistoryWatch,
    history_flag_path,
)
from semspec.agents.cli_streams import StreamStep
from semspec.agents.trajectory_watch import TrajectoryWatch, trajectory_path


class StepFile(Protocol):
    """A file of one run read as it grows, turned into the steps it holds."""

    seen: int
    """Model calls (or messages) read so far; 0 when the run wrote nothing we could read."""

    def poll(self) -> list[StreamStep]:
        """The steps written since the last poll (blocking)."""

    def finish(self) -> list[StreamStep]:
        """The steps left once the run has ended (blocking)."""


@dataclass(frozen=True)
class RunPlace:
    """Where a CLI run happens: what the watch of its file needs to know."""

    argv: list[str]
    cwd: Path
    """The worktree."""
    env: Mapping[str, str]
    """The variables the CLI gets from its role (before its private home is set)."""
    home: Path | None
    """The task's private agent home under the fence, None without one."""
    fenced: bool


@dataclass
class FileWatch:
    """The watch of one run's file, with what the run needs for it."""

    watch: StepFile
    env: dict[str, str] = field(default_factory=dict)
    """Variables set for the CLI so that it writes the file."""
    scratch: Path | None = None
    """A folder made for the file, removed after the run (``close``)."""

    def close(self) -> None:
        """Remove the scratch folder, if any (blocking)."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


@dataclass(frozen=True)
class WatchedCli:
    counts_tokens: bool
    """Whether the file holds each call's tokens (else the run stays unpriced)."""
    plan: Callable[[str, RunPlace], FileWatch | None]
    """The watch of a run (blocking), or None when the file cannot be known or seen."""


def _mini(program: str, place: RunPlace) -> FileWatch | None:
    home = str(place.home) if place.home is not None else place.env.get("HOME")
    path = trajectory_path(program, place.argv, home, place.cwd)
    return FileWatch(TrajectoryWatch.before_run(path)) if path is not None else None


def _aider(program: str, place: RunPlace) -> FileWatch | None:
    named = history_flag_path(place.argv, place.cwd)
    if named is None and place.env.get(HISTORY_ENV):
        named = Path(place.env[HISTORY_ENV])
        named = named if named.is_absolute() else place.cwd / named
    if named is not None:
        return FileWatch(AiderHistoryWatch.before_run(named))
    if place.home is not None:
        path = place.home / HISTORY_NAME
        path.unlink(missing_ok=True)  # ours, from an earlier iteration: it only grows
        return FileWatch(AiderHistoryWatch(path), {HISTORY_ENV: str(path)})
    if place.fenced:
        return None  # no folder both sides see: the run is one step, as before
    scratch = Path(tempfile.mkdtemp(prefix="semspec-aider-"))
    path = scratch / HISTORY_NAME
    return FileWatch(AiderHistoryWatch(path), {HISTORY_ENV: str(path)}, scratch)


WATCHED_CLIS: dict[str, WatchedCli] = {
    "mini": WatchedCli(True, _mini),
    "mini-swe-agent": WatchedCli(True, _mini),
    "aider": WatchedCli(False, _aider),
}
"""Program name → how its run is watched."""
