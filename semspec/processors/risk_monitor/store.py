"""Task states and the file index in a JetStream KV bucket, written with revision checks.

Keys: ``task.<id>`` holds one ``TaskState``; ``file.<hash>`` holds the active tasks that touched
one file (``{"file": ..., "tasks": [...]}``). No value grows with the number of tasks or files
in the project: a value is one task's state or one file's holders. Earlier versions kept the
whole index under one key (``index.files``), which stopped the monitor once it passed the
server's 1 MiB payload limit; ``scan`` drops that key (the index is rebuilt from the states).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass, field

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import (
    APIError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from semspec.core.errors import ServiceError
from semspec.core.logging import logger_for
from semspec.processors.risk_monitor.state import FileIndex, TaskState

LEGACY_INDEX_KEY = "index.files"
_TASK_PREFIX = "task."
_FILE_PREFIX = "file."
_PLAIN_ID = re.compile(r"[A-Za-z0-9_=-]{1,200}")
_PARALLEL_WRITES = 64
_WRONG_LAST_SEQUENCE = 10071  # JetStream's error code for a failed expected-last check
_SCAN_WAIT_S = 10.0


log = logger_for("risk-monitor")


def task_key(task_id: str) -> str:
    """KV key of a task; ids with characters KV keys cannot hold are hashed (state has the id)."""
    if _PLAIN_ID.fullmatch(task_id):
        return _TASK_PREFIX + task_id
    return _TASK_PREFIX + "h-" + hashlib.sha256(task_id.encode()).hexdigest()[:40]


def file_key(path: str) -> str:
    """KV key of one file of the index (paths hold characters KV keys cannot; the value has it)."""
    return _FILE_PREFIX + hashlib.sha256(path.encode()).hexdigest()[:40]


@dataclass
class Snapshot:
    """Everything in the bucket, read in one pass: task states and the stored file index."""

    states: list[TaskState] = field(default_factory=list)
    index: FileIndex = field(default_factory=FileIndex)


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

    async def save_index(self, before: FileIndex, after: FileIndex) -> None:
        """Write the files whose holders changed from ``before`` to ``after`` (one key each)."""
        changed = after.changed(before)
        for start in range(0, len(changed), _PARALLEL_WRITES):
            chunk = changed[start : start + _PARALLEL_WRITES]
            await asyncio.gather(*(self._save_file(path, after.holders(path)) for path in chunk))

    async def _save_file(self, path: str, tasks: list[str]) -> None:
        key = file_key(path)
        if tasks:
            body = {"file": path, "tasks": tasks}
            await self._put(key, json.dumps(body, separators=(",", ":")).encode())
        else:
            await self._delete(key)

    async def task_states(self) -> list[TaskState]:
        """Every stored task state (used by ``semspec monitor state``)."""
        return (await self.scan()).states

    async def scan(self) -> Snapshot:
        """Read the whole bucket in one pass (a KV watch), remembering every key's revision."""
        self._revisions.clear()
        snapshot = Snapshot()
        files: dict[str, list[str]] = {}
        held = (await self._kv.status()).values
        watcher = await self._kv.watchall()
        seen = 0
        ended = False  # nats-py said "end of what is stored", maybe early (see below)
        try:
            # Stop once every message the bucket held when the scan began has come. nats-py's own
            # end marker may come before the first key or between keys (the keys race the
            # server's pending count, seen on a cluster): it is trusted only when nothing more
            # comes after it (keys that expired or were purged since the count).
            while seen < held:
                try:
                    entry = await watcher.updates(timeout=_SCAN_WAIT_S)  # type: ignore[no-untyped-call]
                except NatsTimeoutError as exc:
                    if ended:
                        break
                    raise ServiceError(
                        f"reading the monitor state stopped after {seen} of {held} keys",
                        service="nats",
                    ) from exc
                if entry is None:
                    ended = True
                    continue
                seen += 1
                self._revisions[entry.key] = entry.revision or 0
                if entry.operation in (KV_DEL, KV_PURGE) or entry.value is None:
                    continue
                if entry.key.startswith(_TASK_PREFIX):
                    snapshot.states.append(TaskState.from_json(entry.value))
                elif entry.key.startswith(_FILE_PREFIX):
                    body = json.loads(entry.value)
                    files[str(body["file"])] = [str(t) for t in body["tasks"]]
                elif entry.key == LEGACY_INDEX_KEY:
                    log().info("old single-key file index dropped; rebuilt from task states")
                    await self._delete(entry.key)
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]
        self._listed = set(self._revisions)
        snapshot.states.sort(key=lambda s: task_key(s.task_id))
        snapshot.index = FileIndex(files)
        return snapshot

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
        except KeyNotFoundError as exc:
            # A delete marker (nats-py's get reports it so, with the marker as its entry) is
            # the key's last message: the next write must name it.
            marker = exc.entry.revision if exc.entry is not None else None
            self._revisions[key] = marker or 0
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
            raise _lost_race(key) from exc

    async def _delete(self, key: str) -> None:
        if key not in self._revisions:
            await self._get(key)
        last = self._revisions.pop(key)
        if self._listed is not None:
            self._listed.add(key)  # so the next write reads the delete marker's revision
        if last == 0:
            return  # nothing stored
        try:
            await self._kv.delete(key, last=last)
        except APIError as exc:
            if exc.err_code == _WRONG_LAST_SEQUENCE:
                raise _lost_race(key) from exc
            raise


def _lost_race(key: str) -> ServiceError:
    return ServiceError(
        f"monitor state {key!r} was changed by another writer",
        service="nats",
        hint="run one `semspec monitor` per NATS account; this one will reload and retry",
    )
