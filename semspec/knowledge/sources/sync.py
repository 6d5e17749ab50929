"""Incremental sync of SOPs and rule files: unchanged files (same sha256) are skipped, changed
ones replaced, deleted ones removed; a broken file is reported and keeps its previous version in
the graph. Rule files written for other tools (``rule_kinds``) are found among the files git
tracks and read from the working tree (``rule_reader``); a ``CLAUDE.md``'s hash covers its
imports, so editing an imported file re-ingests the rule."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rdflib import Literal
from rdflib.term import Node

from semspec.graph.store import GraphStore
from semspec.knowledge.sources.rule_document import read_rule
from semspec.knowledge.sources.rule_kinds import RULE_KINDS, rule_files
from semspec.knowledge.sources.rule_reader import RuleProblem, WorkingTreeReader
from semspec.knowledge.sources.sop_document import SopDocument, SopProblem, parse_sop
from semspec.knowledge.sources.sop_triples import INGEST_FORMAT, sop_triples
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
    warnings: list[tuple[str, str]] = field(default_factory=list)
    """A rule ingested without part of it: an import or glob refused, with why."""

    def as_dict(self) -> dict[str, object]:
        """The report as plain data for ``--json``."""
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "skipped": self.skipped,
            "failed": [{"file": f, "problem": p} for f, p in self.failed],
            "warnings": [{"file": f, "problem": p} for f, p in self.warnings],
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


def sync_sources(
    store: GraphStore, repo: Path, rule_kinds: Sequence[str] = tuple(RULE_KINDS)
) -> SyncReport:
    """Bring the graph in line with the SOP files under ``repo`` and the rule files of
    ``rule_kinds`` it tracks; one named graph per file."""
    report = SyncReport()
    stored = stored_sops(store)
    # Ids held by files that still exist; a deleted file's id is free for a new file at once.
    owners = {s.sop_id: path for path, s in stored.items() if (repo / path).is_file()}
    seen: set[str] = set()
    for rel, doc in _documents(repo, stored, rule_kinds, report):
        seen.add(rel)
        old = stored.get(rel)
        if doc is None:
            continue
        unchanged = old is not None and old.source_hash == doc.source_hash
        if unchanged and old is not None and old.ingest_format == INGEST_FORMAT:
            report.skipped.append(rel)
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


_Found = tuple[str, SopDocument | None]
"""A path the sync saw and its document; None keeps what the graph has (unchanged or broken)."""


def _documents(
    repo: Path, stored: dict[str, _Stored], rule_kinds: Sequence[str], report: SyncReport
) -> list[_Found]:
    found: list[_Found] = []
    root = repo / SOP_DIR
    for file in sorted(root.rglob("*.md")) if root.is_dir() else []:
        rel = file.relative_to(repo).as_posix()
        data = file.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        old = stored.get(rel)
        if old is not None and old.source_hash == digest and old.ingest_format == INGEST_FORMAT:
            found.append((rel, None))
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
            found.append((rel, None))
            continue
        found.append((rel, doc))
    reader = WorkingTreeReader(repo)
    for rel, kind in rule_files(reader.paths(), rule_kinds):
        if not os.path.lexists(repo / rel):
            continue  # deleted but not yet `git rm`-ed: gone, as for git status
        try:
            parsed = read_rule(reader, rel, kind)
        except RuleProblem as problem:
            report.failed.append((rel, str(problem)))
            found.append((rel, None))
            continue
        report.warnings += [(rel, f"{what}: {why}") for what, why in parsed.refused]
        if parsed.doc is not None:  # a rule file with no text is no rule (and is removed)
            found.append((rel, parsed.doc))
    return found


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SopProblem(f"not UTF-8 text (byte {exc.start})") from exc
