"""Incremental indexing of a repository into the code meaning graph, one named graph per file.

With a record (``index_record``) a file whose stat is unchanged is not even read; without one,
or when the record does not match the graph, a file whose content hash matches the graph's is
not parsed again. Changed files have their graph replaced, in batches; deleted (or now skipped)
files have it dropped. A file that does not parse is reported with its line, its old facts are
dropped, and the rest are still indexed. Parsing runs in a process pool when there is enough of
it (``index.workers``); memory holds one batch of results, never the whole graph.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

import structlog

from semspec.core.config.models import IndexConfig
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.facts import FileFacts
from semspec.knowledge.code_index.graph_read import stored_hashes
from semspec.knowledge.code_index.index_parse import (
    Broken,
    NotRead,
    Parsed,
    ParseJob,
    ParseSettings,
    Unchanged,
    parse_all,
)
from semspec.knowledge.code_index.index_record import (
    EXTRACTOR_VERSION,
    IndexRecord,
    Marker,
    Row,
    read_marker,
    settings_fingerprint,
    stat_key,
    write_marker,
)
from semspec.knowledge.code_index.index_write import BatchWriter, takes_update_text
from semspec.knowledge.code_index.languages import extract_facts
from semspec.knowledge.code_index.walk import Skipped, walk_repository
from semspec.vocabulary.code import CODE_GRAPH_PREFIX

log = structlog.get_logger(__name__)

Extractor = Callable[[str, bytes], FileFacts]


@dataclass(frozen=True)
class Failure:
    """A file that could not be parsed: where and why."""

    path: str
    line: int
    message: str


@dataclass
class IndexReport:
    """What one ``index_repository`` run did, path lists sorted."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    baseline: str = "graph"
    """What said which files changed: ``record`` (stat, no read), ``graph`` (content hashes)."""
    workers: int = 0
    """Processes that parsed files beside the writer (0: all in this one)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent walking, reading and parsing, writing, and in all."""

    def as_dict(self) -> dict[str, object]:
        """Plain data for ``--json`` output."""
        return {
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "failed": [{"path": f.path, "line": f.line, "message": f.message} for f in self.failed],
            "baseline": self.baseline,
            "workers": self.workers,
            "timings": self.timings,
        }


class Progress(Protocol):
    """Told how many files will be read, then of each one done (a progress bar)."""

    def start(self, total: int) -> None:
        """``total`` files are about to be read."""

    def advance(self) -> None:
        """One more file is done."""


POOL_MIN_FILES = 200
"""Fewer files to parse than this are parsed in this process: starting a pool (a fresh
interpreter per process, about a second) costs more than it saves."""


def pool_size(setting: int | str, files: int) -> int:
    """Processes that parse ``files`` files while this one writes: the setting (``auto``: one
    per core, measured fastest on two cores), but none for a run too short to pay for them."""
    if files < POOL_MIN_FILES:
        return 0
    return (os.cpu_count() or 1) if setting == "auto" else int(setting)


def index_repository(
    store: GraphStore,
    repo: Path,
    config: IndexConfig | None = None,
    extract: Extractor = extract_facts,
    *,
    record: Path | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Bring the code graph of ``repo`` up to date with its files and report what changed.

    ``record`` is the index record's file (created if missing); without it every file is read
    and hashed. ``extract`` turns a path and its bytes into facts; tests hand in a counting
    wrapper of the real one to see which files were parsed (it runs in this process).
    """
    config = config or IndexConfig()
    started = time.perf_counter()
    walked = walk_repository(repo, frozenset(config.exclude_dirs))
    report = IndexReport(skipped=list(walked.skipped))
    walked_at = time.perf_counter()
    with _baseline(store, record, config) as base:
        report.baseline = "record" if base.trusted else "graph"
        present: set[str] = set()
        jobs: list[ParseJob] = []
        for rel in walked.files:
            row = base.rows.get(rel)
            if row is not None and row.stat is not None and row.stat == stat_key(walked.stats[rel]):
                report.unchanged.append(rel)
                present.add(rel)
            else:
                jobs.append(ParseJob(rel, row.hash if row is not None else None))
        report.workers = pool_size(config.workers, len(jobs)) if extract is extract_facts else 0
        settings = ParseSettings(str(repo), config.max_file_bytes, takes_update_text(store))
        writer = BatchWriter(store, base.record)
        if progress is not None:
            progress.start(len(jobs))
        for outcome in parse_all(settings, jobs, report.workers, extract):
            _apply(outcome, report, writer, present)
            if progress is not None:
                progress.advance()
        for rel in sorted(base.stored - present):
            writer.drop(rel)
            if rel in base.rows:
                report.removed.append(rel)
        writer.flush()
        writer.settle()
    report.unchanged.sort()
    report.skipped.sort(key=lambda s: s.path)
    done = time.perf_counter()
    report.timings = {
        "walk_s": round(walked_at - started, 4),
        "parse_s": round(done - walked_at - writer.write_s, 4),
        "write_s": round(writer.write_s, 4),
        "total_s": round(done - started, 4),
    }
    log.info(
        "code index updated",
        indexed=len(report.indexed),
        unchanged=len(report.unchanged),
        removed=len(report.removed),
        skipped=len(report.skipped),
        failed=len(report.failed),
        baseline=report.baseline,
        workers=report.workers,
        seconds=report.timings["total_s"],
    )
    return report


def _apply(
    outcome: Parsed | Unchanged | NotRead | Broken,
    report: IndexReport,
    writer: BatchWriter,
    present: set[str],
) -> None:
    if isinstance(outcome, NotRead):
        report.skipped.append(Skipped(outcome.rel, outcome.reason))
        return
    present.add(outcome.rel)
    if isinstance(outcome, Unchanged):
        report.unchanged.append(outcome.rel)
        writer.seen(outcome.rel, outcome.hash, outcome.stat)
    elif isinstance(outcome, Broken):
        report.failed.append(Failure(outcome.rel, outcome.line, outcome.message))
        # Stale facts would point at lines that no longer say what they claim.
        writer.drop(outcome.rel)
    else:
        writer.replace(outcome)
        report.indexed.append(outcome.rel)


@dataclass
class _Baseline:
    """What the graph holds before the run: per-file rows, and every path it has a graph for."""

    rows: dict[str, Row]
    stored: set[str]
    record: IndexRecord | None
    trusted: bool


@contextmanager
def _baseline(store: GraphStore, path: Path | None, config: IndexConfig) -> Iterator[_Baseline]:
    """The record's rows when it matches the graph and settings, else the graph's own hashes
    (and a fresh record, marked in the graph once the run is through)."""
    record = IndexRecord(path) if path is not None else None
    try:
        marker = read_marker(store)
        settings = settings_fingerprint(config)
        if record is not None and record.describes(marker, settings):
            rows = record.rows()
            yield _Baseline(rows, set(rows), record, trusted=True)
            return
        # A graph written by another extractor version is parsed again from scratch.
        same_extractor = marker is None or marker.extractor == EXTRACTOR_VERSION
        hashes = stored_hashes(store) if same_extractor else {}
        rows = {p: Row(p, None, h) for p, h in hashes.items()}
        record_id = record.restart(settings) if record is not None else None
        yield _Baseline(rows, set(hashes) | _graph_paths(store), record, trusted=False)
        if record is not None and record_id is not None:
            write_marker(store, Marker(record_id, EXTRACTOR_VERSION))
            record.confirm(record_id)
    finally:
        if record is not None:
            record.close()


def _graph_paths(store: GraphStore) -> set[str]:
    """Paths of code graphs in the store, including any left without a file node."""
    return {unquote(g[len(CODE_GRAPH_PREFIX) :]) for g in store.graphs(CODE_GRAPH_PREFIX)}
