"""Per-session runtime state: the session key, metrics, the latest search and issued refs."""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field
from typing import Any


def workspace_hash(root: str) -> str:
    """``sha1`` of the canonical workspace root (expanduser, realpath, forward slashes)[:12]."""
    canonical = os.path.realpath(os.path.expanduser(root)).replace(os.sep, "/")
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:12]


def session_key(root: str, *, session_id: str | None, connection_id: str) -> str:
    """``ws:<hash>:sid:<session_id>`` when the client names a session, else ``…:conn:<id>``."""
    prefix = f"ws:{workspace_hash(root)}"
    if session_id:
        return f"{prefix}:sid:{session_id}"
    return f"{prefix}:conn:{connection_id}"


def new_connection_id() -> str:
    """A server-issued connection id (never taken from the client)."""
    return str(uuid.uuid4())


@dataclass
class SessionMetrics:
    """Observation counters of one session (seed 000, primitive 1)."""

    reads_count: int = 0
    reads_lines_total: int = 0
    reads_chars_total: int = 0
    search_count: int = 0
    reads_after_search: int = 0
    max_read_span: int = 0
    preview_degraded_count: int = 0
    blocked_count: int = 0

    def snapshot(self) -> dict[str, Any]:
        """The counters plus derived ratios, rounded so the output is stable."""
        reads = self.reads_count
        return {
            "reads_count": reads,
            "reads_lines_total": self.reads_lines_total,
            "reads_chars_total": self.reads_chars_total,
            "search_count": self.search_count,
            "read_after_search_ratio": round(self.reads_after_search / reads, 3) if reads else 0.0,
            "avg_read_span": round(self.reads_lines_total / reads, 1) if reads else 0.0,
            "max_read_span": self.max_read_span,
            "preview_degraded_count": self.preview_degraded_count,
            "blocked_count": self.blocked_count,
        }


@dataclass(frozen=True)
class Candidate:
    """One search hit with its stable id."""

    candidate_id: str
    path: str
    line: int
    preview: str


@dataclass(frozen=True)
class SearchRecord:
    """The latest search: query, ranked paths and the refs it issued."""

    query: str
    bundle_id: str
    top_paths: tuple[str, ...]
    candidates: tuple[Candidate, ...]


@dataclass
class SessionState:
    """Runtime (policy) state of one session; in memory only, dropped when the session ends."""

    key: str
    metrics: SessionMetrics = field(default_factory=SessionMetrics)
    latest_search: SearchRecord | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    bundles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    delivered: dict[str, dict[int, str]] = field(default_factory=dict)
    """Per path: line number → hash of the line text already returned in this session."""


class SessionRegistry:
    """Session states by key, created on first use."""

    def __init__(self) -> None:
        self._states: dict[str, SessionState] = {}

    def get(self, key: str) -> SessionState:
        """The state for ``key`` (a fresh one the first time)."""
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = SessionState(key)
        return state

    def end(self, key: str) -> None:
        """Forget a session (its runtime state is not kept past the session)."""
        self._states.pop(key, None)
