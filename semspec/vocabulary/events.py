"""Envelopes of loop events (``agent.monitor.<kind>``) and user signals (``user.signal.<level>``).

Loop event ``data`` by kind (all optional beyond what is listed):

- ``iteration``: ``{"phase": str, "retries": int}``
- ``gate``: ``{"results": [{"name", "passed", "required", "duration_ms"}]}``
- ``review``: ``{"verdict": str, "findings": int, "flagged": bool}``
- ``context``: ``{"tokens_used", "window", "utilization", "tokens_per_iteration",
  "iterations_remaining", "pressure"}``
- ``files``: ``{"files": [paths touched], "task_files": [paths of the task], "repo": str,
  "out_of_scope": [touched paths neither task files nor allowed by ``scope.allow``]}``; the
  risk monitor takes ``out_of_scope`` as the scope-creep list when present, else computes
  ``files`` minus ``task_files`` (events from workers before the key existed)
- ``escalation``: ``{"reason": str, "retries": int, "fingerprint": str, "question": str,
  "source": "loop" | "halt" | "pause"}`` (``source``: the task's own bound or the risk signal
  that stopped it)
- ``finished``: ``{"outcome": str, "commit": str | None, "reason": str | None}``
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MonitorEvent:
    """One loop event. ``event_id`` is stable across activity retries and is the Nats-Msg-Id."""

    event_id: str
    kind: str
    task_id: str
    run_id: str
    iteration: int
    data: dict[str, Any] = field(default_factory=dict)
    plan_id: str | None = None
    at: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> MonitorEvent:
        """Parse an event; raises ``ValueError`` naming what is missing or malformed."""
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise ValueError("event is not a JSON object")
        for key in ("event_id", "kind", "task_id"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise ValueError(f"missing or empty field {key!r}")
        data = body.get("data") or {}
        if not isinstance(data, dict):
            raise ValueError("field 'data' is not an object")
        return cls(
            event_id=body["event_id"],
            kind=body["kind"],
            task_id=body["task_id"],
            run_id=str(body.get("run_id") or ""),
            iteration=int(body.get("iteration") or 0),
            data=data,
            plan_id=body.get("plan_id"),
            at=str(body.get("at") or ""),
        )


@dataclass(frozen=True)
class SuggestedAction:
    """A next step for a human, with a command they can paste."""

    description: str
    command: str


@dataclass(frozen=True)
class UserSignal:
    """A signal to humans on ``user.signal.<level>``; ``signal_id`` is the Nats-Msg-Id."""

    signal_id: str
    task_id: str
    level: str
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    suggested_actions: list[SuggestedAction] = field(default_factory=list)
    plan_id: str | None = None
    message: str = ""
    at: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> UserSignal:
        body = json.loads(raw)
        actions = [SuggestedAction(**a) for a in body.pop("suggested_actions", [])]
        return cls(suggested_actions=actions, **body)


@dataclass(frozen=True)
class RiskSignalInput:
    """Argument of the task workflow's ``pause``, ``halt`` and ``flag`` signals."""

    reason: str
    level: str
    signal_id: str = ""
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
