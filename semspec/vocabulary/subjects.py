"""NATS subjects and stream names. These are an API: never rename after release."""

from __future__ import annotations

from typing import Final, Literal, get_args

MONITOR_STREAM: Final = "AGENT_MONITOR"
MONITOR_SUBJECTS: Final = "agent.monitor.*"
EventKind = Literal[
    "iteration", "gate", "review", "context", "files", "escalation", "finished", "step"
]
EVENT_KINDS: Final[tuple[str, ...]] = get_args(EventKind)
"""One payload model per kind in ``semspec.vocabulary.event_payloads``."""

SIGNAL_STREAM: Final = "USER_SIGNALS"
SIGNAL_SUBJECTS: Final = "user.signal.>"
"""What subscribers read: the signal stream stores each signal under ``user.signal.<level>`` and
republishes it there once, after its dedupe (a repeated publish reaches nobody twice)."""
SIGNAL_INTAKE_SUBJECTS: Final = "semspec.signal.>"
"""What publishers send signals to: only the signal stream listens here."""
SIGNAL_LEVELS: Final = ("warn", "pause", "halt", "escalate")

# Outside ``agent.monitor.*`` on purpose, so dead letters are never consumed as events again.
DEAD_LETTER_STREAM: Final = "SEMSPEC_DEADLETTER"
DEAD_LETTER_SUBJECT: Final = "semspec.deadletter.monitor"


def monitor_subject(kind: EventKind) -> str:
    """Subject of a loop event of ``kind`` (one of ``EVENT_KINDS``)."""
    return f"agent.monitor.{kind}"


def signal_subject(level: str) -> str:
    """Subject a user signal at ``level`` (one of ``SIGNAL_LEVELS``) reaches subscribers on."""
    return f"user.signal.{level}"


def signal_intake_subject(level: str) -> str:
    """Subject a user signal at ``level`` is published to (stored as ``signal_subject(level)``)."""
    return f"semspec.signal.{level}"
