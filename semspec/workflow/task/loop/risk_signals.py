"""What the task loop holds of the risk monitor's signals, as plain state.

The workflow's ``pause``, ``halt`` and ``flag`` handlers hand each signal in; the loop asks
whether a step must stop and reads the notes for the reviewer. No Temporal here: a checkpoint
carries the fields over (``Continuation``), and the rules are plain Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from semspec.core.reasons import RiskReason
from semspec.vocabulary.events import RiskSignalInput

SignalKind = Literal["pause", "halt", "flag"]
StopLevel = Literal["halt", "pause"]


@dataclass
class RiskSignals:
    """A pending halt or pause, notes for the reviewer, and the signals already honoured."""

    flags: list[str] = field(default_factory=list)
    """Notes for the reviewer: the monitor's flags and the loop's own scope notes."""
    pause: RiskSignalInput | None = None
    halt: RiskSignalInput | None = None
    seen: set[str] = field(default_factory=set)
    """Ids of signals already honoured: a redelivery is dropped."""
    scope_flagged: set[str] = field(default_factory=set)
    """Files outside the task the reviewer has been told about."""
    scope_logged: set[str] = field(default_factory=set)
    """Files outside the task the loop's own ``flag`` log entry has named. Kept apart from
    ``scope_flagged``: the monitor's flag may arrive while the developer step still runs (a
    step publishes its ``files`` event before it returns, docs/events.md), and the log must
    still say the loop found the creep in the step's diff."""

    def receive(self, kind: SignalKind, signal: RiskSignalInput) -> str | None:
        """Take a signal in; the line to log, or None when it was already honoured."""
        if signal.signal_id and signal.signal_id in self.seen:
            return None
        if signal.signal_id:
            self.seen.add(signal.signal_id)
        if kind == "pause":
            self.pause = signal
        elif kind == "halt":
            self.halt = signal
        elif not self._already_flagged(signal):
            note = f"{signal.reason}: {signal.message}" if signal.message else signal.reason
            self.flags.append(note)
        # The level only adds news when it differs from the action (a flag sent at warn).
        label = kind if signal.level == kind else f"{kind} ({signal.level})"
        return f"{label}: {signal.reason} {signal.message}".strip()

    def _already_flagged(self, signal: RiskSignalInput) -> bool:
        """Whether a scope-creep flag names only files the reviewer has been told about.

        Either side may be first: the monitor's signal can arrive before the developer step's
        result, so the files it names are noted and the loop does not flag them again.
        """
        outside = signal.evidence.get("outside")
        if signal.reason != RiskReason.SCOPE_CREEP.value or not isinstance(outside, list):
            return False
        files = set(map(str, outside))
        known = bool(files) and files <= self.scope_flagged
        self.scope_flagged.update(files)
        return known

    def note_scope(self, outside: Iterable[str]) -> tuple[str, list[str]] | None:
        """Flag files outside the task the loop has not flagged yet.

        Returns the note and those files, or None when there are none. The monitor flags the
        same creep, but its signal travels through NATS and the bridge and may arrive after
        the reviewer has run; the loop's own note, from the step's diff, cannot be late. It
        may also arrive first: then the reviewer already has the monitor's note and is not
        told twice, but the note is still returned for the task's log.
        """
        new = sorted(set(outside) - self.scope_logged)
        if not new:
            return None
        self.scope_logged.update(new)
        note = f"{RiskReason.SCOPE_CREEP.value}: files outside the task: {', '.join(new)}"
        if not set(new) <= self.scope_flagged:
            self.scope_flagged.update(new)
            self.flags.append(note)
        return note, new

    def stop_requested(self) -> StopLevel | None:
        """``halt`` or ``pause`` when the monitor asked the running step to stop."""
        if self.halt is not None:
            return "halt"
        return "pause" if self.pause is not None else None

    def answered(self) -> None:
        """A human answered: the pending halt or pause is dealt with."""
        self.pause = self.halt = None
