"""Writing an index run's results: graph updates in batches, then the record rows they justify.

Batches bound both memory and transaction size: at most ``BATCH_FILES`` files or
``BATCH_BYTES`` of update text are held before one SPARQL update writes them. A store that
keeps writes in memory (the embedded Oxigraph files) is told to flush every ``FLUSH_BYTES``.
"""

from __future__ import annotations

import os
import time
from typing import Protocol, runtime_checkable

from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.graph_write import facts_to_triples
from semspec.knowledge.code_index.index_parse import Parsed
from semspec.knowledge.code_index.index_record import IndexRecord, Row, recordable
from semspec.vocabulary.code import code_graph

BATCH_FILES = 32
BATCH_BYTES = 2 * 1024 * 1024
FLUSH_BYTES = 16 * 1024 * 1024


@runtime_checkable
class Flushes(Protocol):
    """A store that buffers writes in memory until told to flush (the embedded store)."""

    def flush(self) -> None:
        """Write buffered changes to disk."""


def takes_update_text(store: GraphStore) -> bool:
    """Whether ``store`` parses update text as SPARQL 1.1 says, so a batch can be one update.

    rdflib's in-memory store expands escapes before parsing (``escapes_first``); it gets
    triples, one file at a time. A store that does not say is treated the same way.
    """
    return not getattr(store, "escapes_first", True)


class BatchWriter:
    """Collects graph replacements, drops and record rows; ``flush`` writes them in order."""

    def __init__(
        self, store: GraphStore, record: IndexRecord | None, *, settles: bool = True
    ) -> None:
        self._store = store
        self._record = record
        # False where other threads use the same embedded store (the worker's re-index): a
        # RocksDB flush requested beside them was seen to wait forever.
        self._settles = settles
        self._updates: list[str] = []
        self._bytes = 0
        self._since_flush = 0
        self._rows: list[Row] = []
        self._removed: list[str] = []
        self.write_s = 0.0

    def replace(self, parsed: Parsed) -> None:
        """Replace the graph of ``parsed``'s file with its facts."""
        if parsed.update is not None:
            self._updates.append(parsed.update)
            self._bytes += len(parsed.update)
        elif parsed.facts is not None:
            started = time.perf_counter()
            self._store.replace_graph(code_graph(parsed.rel), facts_to_triples(parsed.facts))
            self._since_flush += 1
            self.write_s += time.perf_counter() - started
        self.seen(parsed.rel, parsed.hash, parsed.stat)
        if self._bytes >= BATCH_BYTES or len(self._rows) >= BATCH_FILES:
            self.flush()

    def seen(self, rel: str, digest: str, stat: os.stat_result | None) -> None:
        """Record that the graph holds ``digest``'s facts for ``rel`` (stat None: hash next)."""
        self._rows.append(Row(rel, None if stat is None else recordable(stat), digest))
        if len(self._rows) >= BATCH_FILES:
            self.flush()

    def drop(self, rel: str) -> None:
        """Remove the graph of ``rel`` and, with the next batch, its row."""
        started = time.perf_counter()
        self._store.drop_graph(code_graph(rel))
        self._since_flush += 1
        self.write_s += time.perf_counter() - started
        self._removed.append(rel)

    def flush(self) -> None:
        """Write the pending graph updates, then the rows that describe them."""
        started = time.perf_counter()
        if self._updates:
            self._store.update(" ;\n".join(self._updates))
            self._since_flush += self._bytes
        if self._since_flush >= FLUSH_BYTES:
            self.settle()
        if self._record is not None and (self._rows or self._removed):
            self._record.write(self._rows, self._removed)
        self.write_s += time.perf_counter() - started
        self._updates, self._rows, self._removed, self._bytes = [], [], [], 0

    def settle(self) -> None:
        """Have a buffering store write its memory to disk."""
        if self._settles and isinstance(self._store, Flushes) and self._since_flush:
            self._store.flush()
        self._since_flush = 0
