"""Incremental indexing of a repository into the code meaning graph, one named graph per file.

A file whose source hash matches the stored one is not parsed again; changed files have their
graph replaced, deleted (or now skipped) files have it dropped. A file that does not parse is
reported with its line and the rest are still indexed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import structlog

from semspec.core.config.models import IndexConfig
from semspec.graph.store import GraphStore
from semspec.processors.code_index.facts import FileFacts, SourceSyntaxError
from semspec.processors.code_index.graph_read import stored_hashes
from semspec.processors.code_index.graph_write import facts_to_triples
from semspec.processors.code_index.languages import extract_facts, source_hash
from semspec.processors.code_index.walk import NotIndexable, Skipped, read_source, walk_repository
from semspec.vocabulary.code import CODE_GRAPH_PREFIX, code_graph

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

    def as_dict(self) -> dict[str, object]:
        """Plain data for ``--json`` output."""
        return {
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "failed": [{"path": f.path, "line": f.line, "message": f.message} for f in self.failed],
        }


def index_repository(
    store: GraphStore,
    repo: Path,
    config: IndexConfig | None = None,
    extract: Extractor = extract_facts,
) -> IndexReport:
    """Bring the code graph of ``repo`` up to date with its files and report what changed.

    ``extract`` turns a path and its bytes into facts; tests hand in a counting wrapper of the
    real one to see which files were parsed.
    """
    config = config or IndexConfig()
    walked = walk_repository(repo, frozenset(config.exclude_dirs))
    report = IndexReport(skipped=list(walked.skipped))
    known = stored_hashes(store)
    present: set[str] = set()
    for rel in walked.files:
        try:
            source = read_source(repo, rel, config.max_file_bytes)
        except NotIndexable as exc:
            report.skipped.append(Skipped(rel, str(exc)))
            continue
        present.add(rel)
        if known.get(rel) == source_hash(source):
            report.unchanged.append(rel)
            continue
        try:
            facts = extract(rel, source)
        except SourceSyntaxError as exc:
            report.failed.append(Failure(rel, exc.line, exc.detail))
            # Stale facts would point at lines that no longer say what they claim.
            store.drop_graph(code_graph(rel))
            continue
        store.replace_graph(code_graph(rel), facts_to_triples(facts))
        report.indexed.append(rel)
    stored_paths = set(known) | _graph_paths(store)
    for rel in sorted(stored_paths - present):
        store.drop_graph(code_graph(rel))
        if rel in known:
            report.removed.append(rel)
    report.skipped.sort(key=lambda s: s.path)
    log.info(
        "code index updated",
        indexed=len(report.indexed),
        unchanged=len(report.unchanged),
        removed=len(report.removed),
        skipped=len(report.skipped),
        failed=len(report.failed),
    )
    return report


def _graph_paths(store: GraphStore) -> set[str]:
    """Paths of code graphs in the store, including any left without a file node."""
    return {unquote(g[len(CODE_GRAPH_PREFIX) :]) for g in store.graphs(CODE_GRAPH_PREFIX)}
