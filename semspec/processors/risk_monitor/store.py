"""Task states and the file index in a JetStream KV bucket, written with revision checks."""

from __future__ import annotations

import hashlib
import re

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NoKeysError
from nats.js.kv import KeyValue

from semspec.core.errors import ServiceError
from semspec.processors.risk_monitor.state import FileIndex, TaskState

INDEX_KEY = "index.files"
_TASK_PREFIX = "task."
_PLAIN_ID = re.compile(r"[A-Za-z0-9_=-]{1,200}")


def task_key(task_id: str) -> str:
    """KV key of a task; ids with characters KV keys cannot hold are hashed (state has the id)."""
    if _PLAIN_ID.fullmatch(task_id):
        return _TASK_PREFIX + task_id
    return _TASK_PREFIX + "h-" + hashlib.sha256(task_id.encode()).hexdigest()[:40]


class StateStore:
    """Reads and compare-and-set writes of monitor state; a lost race raises ``ServiceError``."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv
        self._revisions: dict[str, int] = {}
        # After a full scan, a key neither listed nor written since does not exist: the monitor
        # is the only writer (and if it is not, the revision check catches it), so new tasks
        # cost no read.
        self._listed: set[str] | None = None

    async def load_task(self, task_id: str) -> TaskState | None:
        """The stored state of ``task_id``, or ``None`` if the monitor has not seen it."""
        raw = await self._get(task_key(task_id))
        return None if raw is None else TaskState.from_json(raw)

    async def save_task(self, state: TaskState) -> None:
        """Store ``state`` if nobody wrote the key since this store last read or wrote it."""
        await self._put(task_key(state.task_id), state.to_json())

    async def load_index(self) -> FileIndex:
        """The stored file index (empty if none)."""
        raw = await self._get(INDEX_KEY)
        return FileIndex() if raw is None else FileIndex.from_json(raw)

    async def save_index(self, index: FileIndex) -> None:
        """Store the file index with the same revision check as task states."""
        await self._put(INDEX_KEY, index.to_json())

    async def task_states(self) -> list[TaskState]:
        """Every stored task state (used on start-up to recover and warm the cache)."""
        try:
            keys = await self._kv.keys()
        except NoKeysError:
            keys = []
        states = []
        for key in sorted(k for k in keys if k.startswith(_TASK_PREFIX)):
            raw = await self._get(key)
            if raw is not None:
                states.append(TaskState.from_json(raw))
        self._listed = set(keys)
        return states

    def forget(self) -> None:
        """Drop remembered revisions, so the next writes re-read what is stored."""
        self._revisions.clear()
        self._listed = None

    async def _get(self, key: str) -> bytes | None:
        if self._listed is not None and key not in self._listed and key not in self._revisions:
            self._revisions[key] = 0
            return None
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError:
            self._revisions[key] = 0
            return None
        self._revisions[key] = entry.revision or 0
        return entry.value

    async def _put(self, key: str, value: bytes) -> None:
        if key not in self._revisions:
            await self._get(key)
        try:
            self._revisions[key] = await self._kv.update(key, value, last=self._revisions[key])
        except KeyWrongLastSequenceError as exc:
            self._revisions.pop(key, None)
            raise ServiceError(
                f"monitor state {key!r} was changed by another writer",
                service="nats",
                hint="run one `semspec monitor` per NATS account; this one will reload and retry",
            ) from exc
