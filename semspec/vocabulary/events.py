"""Envelopes of loop events (``agent.monitor.<kind>``) and user signals (``user.signal.<level>``).

A loop event is one model per kind (``IterationEvent`` … ``FinishedEvent``) with the same
envelope fields and a typed ``data`` (``semspec.vocabulary.event_payloads``); ``MonitorEvent``
is their union, told apart by ``kind``, so ``event.kind == "files"`` narrows ``event.data`` to
``FilesPayload``. On the wire an event is the JSON of its model::

    {"event_id": "...", "kind": "iteration", "task_id": "...", "run_id": "...",
     "iteration": 3, "plan_id": null, "at": "2026-...", "data": {"phase": "developer", ...}}

Parsing is strict (``event_from_json``) and raises ``pydantic.ValidationError``, a
``ValueError``; ``validation_summary`` turns it into one line naming each bad field. Events an
older worker published with keys the models do not name (an escalation's ``event_key``, a
``files`` event without ``out_of_scope``) fail the same way: the risk monitor moves them to its
dead-letter stream with that line. ``docs/events.md`` lists every kind's fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, TypeAdapter, ValidationError

from semspec.core.config.models import RiskLevel
from semspec.core.owner_key import canonical
from semspec.vocabulary.event_payloads import (
    ContextPayload,
    EscalationPayload,
    FilesPayload,
    FinishedPayload,
    GatePayload,
    IterationPayload,
    ReviewPayload,
    StepPayload,
)
from semspec.vocabulary.signal_evidence import SignalEvidence

NonEmpty = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True
    )

    def to_json(self) -> bytes:
        """The JSON published on NATS."""
        return self.model_dump_json().encode()


class LoopEvent(_Model):
    """The envelope every loop event shares; ``kind`` (the subject's last token) and ``data``
    (that kind's payload, below) complete it."""

    event_id: NonEmpty
    """Stable across activity retries; also the ``Nats-Msg-Id``."""
    task_id: NonEmpty
    """The task the event is about."""
    run_id: str
    """The Temporal run that published it."""
    iteration: NonNegativeInt
    """The loop's iteration (0 before the first developer turn)."""
    plan_id: str | None = None
    """The plan the task belongs to, if any."""
    at: str = ""
    """When the loop recorded it (ISO 8601, UTC); after an outage it is published later."""


class IterationEvent(LoopEvent):
    kind: Literal["iteration"] = "iteration"
    data: IterationPayload


class GateEvent(LoopEvent):
    kind: Literal["gate"] = "gate"
    data: GatePayload


class ReviewEvent(LoopEvent):
    kind: Literal["review"] = "review"
    data: ReviewPayload


class ContextEvent(LoopEvent):
    kind: Literal["context"] = "context"
    data: ContextPayload


class FilesEvent(LoopEvent):
    kind: Literal["files"] = "files"
    data: FilesPayload


class EscalationEvent(LoopEvent):
    kind: Literal["escalation"] = "escalation"
    data: EscalationPayload


class FinishedEvent(LoopEvent):
    kind: Literal["finished"] = "finished"
    data: FinishedPayload


class StepEvent(LoopEvent):
    kind: Literal["step"] = "step"
    data: StepPayload


MonitorEvent = Annotated[
    IterationEvent
    | GateEvent
    | ReviewEvent
    | ContextEvent
    | FilesEvent
    | EscalationEvent
    | FinishedEvent
    | StepEvent,
    Field(discriminator="kind"),
]
"""Any loop event; ``kind`` says which."""

_MONITOR_EVENT: TypeAdapter[MonitorEvent] = TypeAdapter(MonitorEvent)


def event_from_json(raw: bytes | str) -> MonitorEvent:
    """Parse and validate one published event; raises ``ValidationError``."""
    return _MONITOR_EVENT.validate_json(raw)


def monitor_event(kind: str, data: BaseModel | dict[str, Any], **envelope: Any) -> MonitorEvent:
    """Validate an event of ``kind`` from its payload (a model or a dict) and envelope fields.

    Raises ``ValidationError`` when the kind is unknown, ``data`` is not that kind's payload or
    a field is missing or malformed.
    """
    return _MONITOR_EVENT.validate_python({**envelope, "kind": kind, "data": data})


def validation_summary(exc: ValidationError) -> str:
    """One line naming each bad field and what was expected (never echoing the input)."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


class SuggestedAction(_Model):
    """A next step for a human, with a command they can paste."""

    description: str
    """What the step does, for people."""
    command: str
    """The command line to paste."""


class UserSignal(_Model):
    """A signal to humans on ``user.signal.<level>``; ``signal_id`` is the Nats-Msg-Id.

    Only ``warn`` and above are published; ``observe`` and ``log`` signals stay in the
    monitor's log.
    """

    signal_id: NonEmpty
    """Same rule, level, task and episode: same id, so a repeat is dropped as a duplicate."""
    task_id: NonEmpty
    """The task the signal is about."""
    level: RiskLevel
    """The rung of the ladder reached; also the subject's last token."""
    reason: NonEmpty
    """A risk reason (``retry_limit`` …) or, for the loop's own escalation, its reason."""
    evidence: SignalEvidence
    """What the rule fired on (below), or the ``EscalationRaised`` payload of an escalation."""
    suggested_actions: list[SuggestedAction] = []
    """Next steps, each a command to paste."""
    plan_id: str | None = None
    """The plan the task belongs to, if any."""
    message: str = ""
    """One line for people saying what was seen."""
    at: str = ""
    """The time of the event that raised it."""

    @classmethod
    def from_json(cls, raw: bytes | str) -> UserSignal:
        """Parse and validate a published signal; raises ``ValidationError``."""
        return cls.model_validate_json(raw)


RISK_SIGNAL = "semspec/risk-signal"
"""Purpose of the owner's signature on a risk signal."""


@dataclass(frozen=True)
class RiskSignalInput:
    """Argument of the task workflow's ``pause``, ``halt`` and ``flag`` signals.

    A Temporal signal argument, so a dataclass; ``evidence`` is the signal's evidence as JSON.
    """

    reason: str
    level: str
    signal_id: str = ""
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    signature: str = ""
    """The stack owner's signature over ``signed_fields`` (ADR 0004); the workflow drops a
    signal without a valid one."""

    def signed_fields(self, kind: str, task_id: str) -> dict[str, Any]:
        """What the signature covers: the signal, its kind and the one task it is for."""
        return {
            "kind": kind,
            "task_id": task_id,
            "signal_id": self.signal_id,
            "reason": self.reason,
            "level": self.level,
            "message": self.message,
            "evidence": canonical(self.evidence),
        }
