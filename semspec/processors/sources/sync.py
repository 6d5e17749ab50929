"""Incremental SOP sync: unchanged files (same sha256) are skipped, changed ones replaced,
deleted ones removed; a broken file is reported and keeps its previous version in the graph."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from rdflib import Literal
from rdflib.term import Node

from semspec.graph.store import GraphStore
from semspec.processors.sources.sop_document import SopProblem, parse_sop
from semspec.processors.sources.sop_triples import INGEST_FORMAT, sop_triples
from semspec.vocabulary import source as sd
from semspec.vocabulary.namespaces import SOP_GRAPH_PREFIX, sop_graph

SOP_DIR = Path(".semspec/sources/docs/sops")
"""Where SOPs live, relative to the repository root."""


@dataclass
class SyncReport:
    """What one sync did, by repo-relative path; ``failed`` pairs a path with its problem."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The report as plain data for ``--json``."""
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "skipped": self.skipped,
            "failed": [{"file": f, "problem": p} for f, p in self.failed],
        }


@dataclass(frozen=True)
class _Stored:
    graph: str
    sop_id: str
    source_hash: str
    ingest_format: int


def stored_sops(store: GraphStore) -> dict[str, _Stored]:
    """The SOPs now in the graph, keyed by repo-relative path."""
    rows = store.select(
        f"""SELECT ?g ?id ?path ?hash ?format WHERE {{
  GRAPH ?g {{
    ?s a <{sd.SOP}> ; <{sd.ID}> ?id ; <{sd.PATH}> ?path ; <{sd.SOURCE_HASH}> ?hash .
    OPTIONAL {{ ?s <{sd.INGEST_FORMAT}> ?format }}
  }}
  FILTER(STRSTARTS(STR(?g), ?prefix))
}}""",
        {"prefix": Literal(SOP_GRAPH_PREFIX)},
    )
    return {
        str(r["path"]): _Stored(str(r["g"]), str(r["id"]), str(r["hash"]), _format(r["format"]))
        for r in rows
    }


def _format(value: Node | None) -> int:
    # SOPs written before the format was recorded count as format 1.
    return int(value.toPython()) if isinstance(value, Literal) else 1


def sync_sources(store: GraphStore, repo: Path) -> SyncReport:
    """Bring the graph in line with the SOP files under ``repo``; one named graph per file."""
    report = SyncReport()
    stored = stored_sops(store)
    root = repo / SOP_DIR
    files = sorted(root.rglob("*.md")) if root.is_dir() else []
    # Ids held by files that still exist; a deleted file's id is free for a new file at once.
    owners = {s.sop_id: path for path, s in stored.items() if (repo / path).is_file()}
    seen: set[str] = set()
    for file in files:
        rel = file.relative_to(repo).as_posix()
        seen.add(rel)
        data = file.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        old = stored.get(rel)
        if old is not None and old.source_hash == digest and old.ingest_format == INGEST_FORMAT:
            report.skipped.append(rel)
            continue
        try:
            doc = parse_sop(
                _decode(data),
                default_id=file.relative_to(root).with_suffix("").as_posix(),
                path=rel,
                source_hash=digest,
            )
        except SopProblem as problem:
            report.failed.append((rel, str(problem)))
            continue
        owner = owners.get(doc.sop_id)
        if owner is not None and owner != rel:
            report.failed.append((rel, f"id {doc.sop_id!r} is already used by {owner}"))
            continue
        store.replace_graph(sop_graph(doc.sop_id), sop_triples(doc))
        if old is not None and old.graph != sop_graph(doc.sop_id):
            store.drop_graph(old.graph)
            owners.pop(old.sop_id, None)
        owners[doc.sop_id] = rel
        (report.added if old is None else report.updated).append(rel)
    for rel, old in sorted(stored.items()):
        if rel not in seen:
            store.drop_graph(old.graph)
            report.removed.append(rel)
    return report


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SopProblem(f"not UTF-8 text (byte {exc.start})") from exc
