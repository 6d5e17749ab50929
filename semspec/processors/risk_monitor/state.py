"""What the monitor remembers: one ``TaskState`` per task and the ``FileIndex`` across tasks.

Both are plain JSON in the KV bucket (the index as one key per file, see ``store``), so
``semspec monitor state`` can print them and a restarted monitor continues where the previous
one stopped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


def event_digest(event_id: str) -> str:
    """Short stable digest of an event id; 64 bits keep 1,000 remembered ids small."""
    return hashlib.blake2b(event_id.encode(), digest_size=8).hexdigest()


@dataclass
class PendingSignal:
    """A signal written to the task state before it is published (the outbox of a crash).

    ``action`` is the workflow signal the bridge sends (``pause``, ``halt``, ``flag``) or empty.
    """

    signal: dict[str, Any]
    action: str = ""


@dataclass
class TaskState:
    """Everything the rules know about one task in the current episode."""

    task_id: str
    plan_id: str | None = None
    episode: int = 0
    """Counts human resolutions; signal ids include it, so a new episode may signal again."""
    levels: dict[str, str] = field(default_factory=dict)
    """Highest level emitted per rule in this episode; it never goes down."""
    seen: list[str] = field(default_factory=list)
    """Digests of the most recent event ids, oldest first."""
    retries: int = 0
    retry_allowance: int = 0
    """Extra retries humans granted with ``extend_budget``, added to the retry rule's threshold."""
    fingerprints: dict[str, int] = field(default_factory=dict)
    """Times each evidence fingerprint was seen in this episode."""
    touched: list[str] = field(default_factory=list)
    repo: str = ""
    """The repository identity of the task's ``files`` events (prefix of its index keys)."""
    task_files: list[str] = field(default_factory=list)
    outside_scope: list[str] = field(default_factory=list)
    """Files outside the task already signalled in this episode; only new ones climb again."""
    protected: list[str] = field(default_factory=list)
    """Protected paths (under ``.semspec/``, escaping symlinks) already signalled this episode."""
    files_iteration: int = 0
    """The highest iteration a ``files`` event of the task named; with the next three fields,
    what that event showed of the scope and protected rules. A step publishes its ``files``
    event as it returns, so a retry's may arrive before the answer that started its episode
    (docs/operations.md): the answer then checks these again in the new episode."""
    files_event_id: str = ""
    files_outside: list[str] = field(default_factory=list)
    files_semspec: list[str] = field(default_factory=list)
    """The event's paths under ``.semspec/`` (all ``files`` paths the protected rule reads)."""
    files_symlinks: list[str] = field(default_factory=list)
    utilization: float = 0.0
    active: bool = True
    events: int = 0
    last_event_at: str = ""
    received_at: float = 0.0
    """When JetStream stored the task's latest event (epoch seconds, the server's clock, which
    an event cannot forge); tasks idle for ``risk.idle_task_s`` leave the active set."""
    outbox: list[PendingSignal] = field(default_factory=list)
    """Signals stored but not yet confirmed published; flushed again after a crash."""
    step_turn: str = ""
    """The agent turn the step window belongs to (``role/iteration``); a step of another turn,
    or numbered at or below the last one, starts the window afresh."""
    step_last: int = 0
    """The number of the turn's latest step."""
    step_paused: bool = False
    """A pause went out during this turn: its later steps, taken while the stop reaches the
    agent, are observed only and never climb the ladder (issue 24); a new turn clears it."""
    step_window: list[list[Any]] = field(default_factory=list)
    """The turn's latest tool steps (wait steps left out), oldest first, each as
    ``[event id, step, tool, action hash, observation hash, error]``; at most as many as the
    largest threshold of the tool-step rules (``step_rules``)."""
    silent_steps: list[list[Any]] = field(default_factory=list)
    """The turn's model calls in a row that asked for no tool, as ``[event id, step]``."""
    window_errors: list[list[Any]] = field(default_factory=list)
    """Context-window errors of this episode, in any turn, as ``[event id, step]``."""

    def to_json(self) -> bytes:
        """Compact JSON for the KV bucket."""
        # vars() rather than asdict(): asdict deep-copies every list and is the hot spot here.
        body = {**vars(self), "outbox": [vars(p) for p in self.outbox]}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TaskState:
        """Parse a stored state (written by ``to_json``)."""
        body = json.loads(raw)
        body["outbox"] = [PendingSignal(**item) for item in body.get("outbox", [])]
        return cls(**body)


@dataclass
class FileIndex:
    """Which active tasks touched which file, to spot conflicting changes across tasks."""

    files: dict[str, list[str]] = field(default_factory=dict)

    def holders(self, path: str) -> list[str]:
        """Active tasks that touched ``path``."""
        return self.files.get(path, [])

    def add(self, task_id: str, paths: list[str]) -> FileIndex:
        """A copy with ``task_id`` recorded on each path (adding twice changes nothing)."""
        files = dict(self.files)
        for path in paths:
            tasks = files.get(path, [])
            if task_id not in tasks:
                files[path] = sorted([*tasks, task_id])
        return FileIndex(files)

    def remove(self, *task_ids: str) -> FileIndex:
        """A copy without ``task_ids`` (a finished task no longer conflicts with anyone)."""
        gone = set(task_ids)
        files: dict[str, list[str]] = {}
        for path, tasks in self.files.items():
            kept = [t for t in tasks if t not in gone]
            if kept:
                files[path] = kept
        return FileIndex(files)

    def changed(self, other: FileIndex) -> list[str]:
        """Files whose holders differ between this index and ``other`` (what a save writes)."""
        keys = self.files.keys() | other.files.keys()
        return sorted(k for k in keys if self.holders(k) != other.holders(k))
