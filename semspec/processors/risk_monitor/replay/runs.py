"""A recorded run as the monitor would have received it, and the error of an unusable file."""

from __future__ import annotations

from dataclasses import dataclass, field

from semspec.core.errors import InputError
from semspec.vocabulary.events import MonitorEvent

MAX_RUN_STEPS = 100_000
"""Most steps one run may have; a longer one is refused rather than held in memory."""


class ReplayFileError(InputError):
    """A recorded file that cannot be replayed: unreadable, too large, or not a known format."""

    def __init__(self, path: str, problem: str, *, line: int | None = None) -> None:
        self.path = path
        self.problem = problem
        where = f"{path}:{line}" if line is not None else path
        super().__init__(
            f"{where}: {problem}",
            hint="replay reads semspec step events (JSONL), a chat log, a SWE-agent .traj, "
            "an OpenHands event list or an ATIF trajectory (JSON, or gzip of one)",
        )


@dataclass(frozen=True)
class RecordedRun:
    """One agent run: its events in order, and where its dollars come from."""

    name: str
    """The file, with ``#<task id>`` when the file holds several tasks."""
    format: str
    """The format the file was read as: ``semspec`` (step events), ``chat``,
    ``mini-swe-agent``, ``swe-agent``, ``openhands`` or ``atif``."""
    events: list[MonitorEvent] = field(default_factory=list)
    dollars_from: str | None = None
    """``steps`` (recorded per step), ``registry`` (the model's price), ``run total`` (a
    total the log states, shared out by tokens) or None when no price is known."""
