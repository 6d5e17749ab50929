"""The index record: what the code graph holds for each file, kept beside the graph in SQLite.

One row per indexed file: its path, the ``lstat`` it had when read (size, mtime, ctime, inode)
and the hash of the content whose facts the graph holds. A re-index skips a file whose stat
still matches without reading it, so the work after one change is one file's work.

The record is trusted only while it describes this graph with these settings: the graph holds
a marker (a random id and the extractor version) that the record repeats, and the record holds
a fingerprint of the index settings. Any mismatch (record deleted, graph wiped or replaced,
``index`` settings or extractor changed) and the indexer compares content hashes with the graph
instead, then writes a fresh record. Rows are written in one transaction per batch, after the
graph writes they describe, so a crash leaves rows that are stale at worst, never ahead of the
graph: a stale row's stat no longer matches and the file is read again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rdflib import Literal, URIRef

from semspec.core.config.models import IndexConfig, SemspecConfig
from semspec.core.run_folder import run_dir_of
from semspec.graph.store import GraphStore

EXTRACTOR_VERSION = 1
"""Raise when extraction changes what it writes: every file is then parsed again."""

MARKER_GRAPH = "urn:semspec:graph:code-index"
_MARKER = URIRef("urn:semspec:code-index")
_RECORD_ID = URIRef("urn:semspec:code-index:record")
_EXTRACTOR = URIRef("urn:semspec:code-index:extractor")

# A file changed again within the same clock tick as its read would keep its stat; a row for
# a file modified this recently gets no stat, so the next run hashes it (git's "racy" rule).
RACY_NS = 2_000_000_000

Stat = tuple[int, int, int, int]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER,
    hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def stat_key(st: os.stat_result) -> Stat:
    """What says a file is unchanged without reading it."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def recordable(st: os.stat_result, now_ns: int | None = None) -> Stat | None:
    """The stat to record for a file just read, or None when it changed too recently to trust."""
    now = time.time_ns() if now_ns is None else now_ns
    return None if now - st.st_mtime_ns < RACY_NS else stat_key(st)


def settings_fingerprint(config: IndexConfig) -> str:
    """A digest of everything that changes which files are indexed or what is extracted."""
    settings = {
        "extractor": EXTRACTOR_VERSION,
        "max_file_bytes": config.max_file_bytes,
        "exclude_dirs": sorted(config.exclude_dirs),
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def record_path(config: SemspecConfig, repo: Path) -> Path:
    """Where the record of the repository's code graph lives: in the run directory, which
    git does not see (``semspec init`` excludes it) and losing which costs one slower run."""
    return run_dir_of(config, repo) / "code-index.sqlite"


@dataclass(frozen=True)
class Marker:
    """What the graph says about the record that describes it."""

    record_id: str
    extractor: int


def read_marker(store: GraphStore) -> Marker | None:
    """The graph's marker, or None for a graph no recorded index wrote."""
    rows = store.select(
        f"SELECT ?id ?ex WHERE {{ GRAPH ?g {{ ?m <{_RECORD_ID}> ?id ; <{_EXTRACTOR}> ?ex }} }}",
        {"g": URIRef(MARKER_GRAPH), "m": _MARKER},
    )
    if not rows or rows[0]["id"] is None or rows[0]["ex"] is None:
        return None
    try:
        return Marker(str(rows[0]["id"]), int(str(rows[0]["ex"])))
    except ValueError:
        return None


def write_marker(store: GraphStore, marker: Marker) -> None:
    """Mark the graph as the one the record with ``marker.record_id`` describes."""
    store.replace_graph(
        MARKER_GRAPH,
        [
            (_MARKER, _RECORD_ID, Literal(marker.record_id)),
            (_MARKER, _EXTRACTOR, Literal(marker.extractor)),
        ],
    )


@dataclass(frozen=True)
class Row:
    """One recorded file: its stat when read (None: hash it next time) and its content hash."""

    path: str
    stat: Stat | None
    hash: str


class IndexRecord:
    """The SQLite file of rows and meta values; every write is one transaction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The worker's re-index and a command may write at the same time: wait, don't fail.
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # No sync per batch: a row lost to a power cut only makes the next run read that file.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database file."""
        self._db.close()

    def meta(self, key: str) -> str | None:
        """A meta value (``record_id``, ``settings``) or None."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def rows(self) -> dict[str, Row]:
        """Every recorded file, keyed by path (a few hundred bytes per file, no facts)."""
        found: dict[str, Row] = {}
        query = "SELECT path, size, mtime_ns, ctime_ns, inode, hash FROM files"
        for path, size, mtime, ctime, inode, digest in self._db.execute(query):
            stat = None if size is None else (size, mtime, ctime, inode)
            found[path] = Row(path, stat, digest)
        return found

    def row(self, path: str) -> Row | None:
        """The row of one file, or None."""
        found = self._db.execute(
            "SELECT size, mtime_ns, ctime_ns, inode, hash FROM files WHERE path = ?", (path,)
        ).fetchone()
        if found is None:
            return None
        size, mtime, ctime, inode, digest = found
        return Row(path, None if size is None else (size, mtime, ctime, inode), digest)

    def write(self, rows: Iterable[Row], removed: Iterable[str] = ()) -> None:
        """Upsert ``rows`` and delete the ``removed`` paths in one transaction."""
        upserts = [
            (r.path, *(r.stat if r.stat is not None else (None, None, None, None)), r.hash)
            for r in rows
        ]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", upserts)
            self._db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in removed])

    def restart(self, settings: str) -> str:
        """Forget every row and start a record for ``settings`` under a new id (returned)."""
        record_id = uuid.uuid4().hex
        with self._transaction():
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM meta")
            self._db.execute("INSERT INTO meta VALUES ('settings', ?)", (settings,))
            # The id goes in once the graph carries the marker (``confirm``): until then a crash
            # leaves a record no graph vouches for.
        return record_id

    def confirm(self, record_id: str) -> None:
        """Note that the graph now carries the marker of ``record_id``."""
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('record_id', ?)", (record_id,))

    def describes(self, marker: Marker | None, settings: str) -> bool:
        """Whether this record is the one the graph's ``marker`` names, for ``settings``."""
        return (
            marker is not None
            and self.meta("record_id") == marker.record_id
            and self.meta("settings") == settings
        )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")
