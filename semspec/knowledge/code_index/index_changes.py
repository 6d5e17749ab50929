"""Index given contents of given paths: how the worker brings the graph up to an approved commit.

The contents come from a commit, not the working tree, so the record gets their hashes without
a stat: the next ``semspec index`` reads those files once and keeps or replaces the facts by
what the working tree holds. The record is written only while it describes this graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from semspec.core.config.models import IndexConfig
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.index_parse import (
    Broken,
    Parsed,
    ParseJob,
    ParseSettings,
    parse_file,
)
from semspec.knowledge.code_index.index_record import (
    IndexRecord,
    read_marker,
    settings_fingerprint,
)
from semspec.knowledge.code_index.index_write import BatchWriter, takes_update_text
from semspec.knowledge.code_index.indexer import Failure, IndexReport
from semspec.knowledge.code_index.languages import language_of
from semspec.knowledge.code_index.walk import Skipped, content_refusal


@dataclass(frozen=True)
class Change:
    """A path as a commit leaves it: its bytes, None when deleted, or why it is not read."""

    path: str
    content: bytes | None
    refusal: str | None = None


def index_changes(
    store: GraphStore, changes: Iterable[Change], config: IndexConfig, record: Path | None
) -> IndexReport:
    """Replace, drop or keep the graph of each changed path; report as ``index_repository``."""
    report = IndexReport(baseline="commit")
    opened = IndexRecord(record) if record is not None else None
    try:
        trusted = opened is not None and opened.describes(
            read_marker(store), settings_fingerprint(config)
        )
        writer = BatchWriter(store, opened if trusted else None, settles=False)
        settings = ParseSettings("", config.max_file_bytes, takes_update_text(store))
        for change in changes:
            _one(change, config, settings, writer, report)
        # The store is not flushed (``settles=False``): these are a task's files, written while
        # the worker's other activities use the same embedded store, and a RocksDB flush
        # requested beside them was seen to wait forever (a plan's parallel tasks in CI). The
        # writes are durable without it, in the store's write-ahead log.
        writer.flush()
    finally:
        if opened is not None:
            opened.close()
    return report


def _one(
    change: Change,
    config: IndexConfig,
    settings: ParseSettings,
    writer: BatchWriter,
    report: IndexReport,
) -> None:
    rel = change.path
    parts = PurePosixPath(rel).parts
    if language_of(rel) is None or any(part in config.exclude_dirs for part in parts[:-1]):
        return  # never indexed, so nothing to keep up to date
    refusal = change.refusal
    if change.content is None and refusal is None:
        writer.drop(rel)
        report.removed.append(rel)
        return
    if refusal is None and change.content is not None:
        refusal = content_refusal(change.content, config.max_file_bytes)
    if refusal is not None or change.content is None:
        writer.drop(rel)  # what the graph held no longer describes the file
        report.skipped.append(Skipped(rel, refusal or "not readable"))
        return
    outcome = parse_file(settings, ParseJob(rel, None), content=change.content)
    if isinstance(outcome, Parsed):
        writer.replace(outcome)
        report.indexed.append(rel)
    elif isinstance(outcome, Broken):
        report.failed.append(Failure(rel, outcome.line, outcome.message))
        writer.drop(rel)
