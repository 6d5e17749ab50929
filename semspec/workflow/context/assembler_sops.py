"""The SOPs that apply to the task files, read from the graph in three queries (candidates by
glob prefix, then the matched SOPs' parents and chunks), and the text of each one's parts
(``sop_budget`` decides which parts go into the reviewer's context)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from rdflib import Literal, URIRef

from semspec.graph.store import GraphStore, Row
from semspec.knowledge.sources.sop_document import SopDocument
from semspec.vocabulary import source as sd
from semspec.vocabulary.applies_to import any_matches, lookup_keys
from semspec.vocabulary.namespaces import SOP_GRAPH_PREFIX
from semspec.vocabulary.review import SEVERITIES


@dataclass
class MatchedSop:
    """An SOP that applies to the task: its parts, and how many chunks the budget took.

    ``requirements`` are never repeated by a chunk (ingestion leaves them out of the chunks),
    so the parent text is the one place they appear.
    """

    sop_id: str
    severity: str
    title: str = ""
    applies_to: list[str] = field(default_factory=list)
    summary: str = ""
    requirements: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    taken: int = 0
    origin: str = "sop"
    """``sop``, or the rule-file kind it was read from (``rule_kinds``)."""
    path: str = ""
    """The file it was read from."""
    imports: list[str] = field(default_factory=list)
    """Files a ``CLAUDE.md`` imported into it."""
    scope_folder: str | None = None
    """The folder a nested rule file applies to; None for other rules."""
    overrides: list[str] = field(default_factory=list)
    """Ids of matched rules of its kind in folders above it: where they disagree, it wins."""

    # The texts are built once: the budget counts and joins them many times per SOP.
    @cached_property
    def heading(self) -> str:
        """The SOP's heading line in the context."""
        if self.origin == "sop":
            return f"### SOP {self.sop_id}: {self.title or self.sop_id} ({self.severity})"
        # A rule file's id is its path; its title is only worth repeating when it has one.
        title = f": {self.title}" if self.title and self.title != self.sop_id else ""
        return f"### Rule {self.sop_id}{title} ({self.severity})"

    @cached_property
    def core(self) -> str:
        """Heading and numbered requirements: the least of an SOP the reviewer may get."""
        lines = [self.heading]
        if self.requirements:
            lines.append("Requirements:")
            lines += [f"{i}. {r}" for i, r in enumerate(self.requirements, start=1)]
        return "\n".join(lines)

    @cached_property
    def parent(self) -> str:
        """Heading, origin, the globs it applies to, precedence, summary and requirements."""
        lines = [self.heading]
        if self.origin != "sop":
            imported = f"; imports {', '.join(self.imports)}" if self.imports else ""
            lines.append(f"Origin: {self.path} ({self.origin}{imported})")
        lines.append(f"Applies to: {', '.join(self.applies_to)}")
        if self.overrides:
            lines.append(
                f"Takes precedence over {', '.join(self.overrides)} where they disagree "
                "(the nearest one wins)"
            )
        if self.summary:
            lines.append(f"Summary: {self.summary}")
        return "\n".join([*lines, *self.core.split("\n")[1:]])


def matching_sops(
    store: GraphStore, files: Sequence[str], pinned: Sequence[SopDocument] | None = None
) -> list[MatchedSop]:
    """SOPs and rules whose ``applies_to`` matches a task file, most severe first, then by id.

    With ``pinned`` (the rule files of a task's base commit), rule files come from it and the
    graph gives SOPs only: a task is reviewed against the rules it started from.
    """
    if not files:
        return []
    found = _from_graph(store, files)
    if pinned is None:
        return found
    sops = [s for s in found if s.origin == "sop"]
    rules = [_from_document(d) for d in pinned if any_matches(d.applies_to, files)]
    return ordered([*sops, *rules])


def _from_document(doc: SopDocument) -> MatchedSop:
    return MatchedSop(
        sop_id=doc.sop_id,
        severity=doc.severity,
        title=doc.title,
        applies_to=sorted(doc.applies_to),
        summary=doc.summary,
        requirements=list(doc.requirements),
        chunks=[c.content for c in doc.chunks],
        origin=doc.origin_kind,
        path=doc.path,
        imports=list(doc.imports),
        scope_folder=doc.scope_folder,
    )


def _from_graph(store: GraphStore, files: Sequence[str]) -> list[MatchedSop]:
    keys = {key for f in files for key in lookup_keys(f)}
    # A glob can only match a path when its literal prefix starts one of the path's lookup
    # keys, so every prefix of every key is looked up exactly (an index hit, not a scan);
    # the glob itself then decides.
    prefixes = sorted({key[:end] for key in keys for end in range(len(key) + 1)})
    rows = store.select(
        f"""SELECT DISTINCT ?sop ?h ?glob WHERE {{
  GRAPH ?g {{ ?sop <{sd.MATCH_PREFIX}> ?prefix }}
  GRAPH ?h {{ ?sop <{sd.APPLIES_TO}> ?glob }}
  FILTER(STRSTARTS(STR(?h), ?sop_graphs))
}}""",
        {"prefix": [Literal(p) for p in prefixes], "sop_graphs": Literal(SOP_GRAPH_PREFIX)},
    )
    globs: dict[str, list[str]] = {}
    graphs: dict[str, str] = {}
    for row in rows:
        globs.setdefault(str(row["sop"]), []).append(str(row["glob"]))
        graphs[str(row["sop"])] = str(row["h"])
    matched = sorted(iri for iri, g in globs.items() if any_matches(g, files))
    if not matched:
        return []
    return _load(store, matched, globs, graphs)


def _load(
    store: GraphStore, iris: list[str], globs: dict[str, list[str]], graphs: dict[str, str]
) -> list[MatchedSop]:
    sops = {"sop": [URIRef(i) for i in iris]}
    parents = {
        str(row["sop"]): _parent(row, sorted(globs[str(row["sop"])]))
        for row in store.select(
            f"""SELECT ?sop ?id ?title ?severity ?summary ?requirements WHERE {{
  GRAPH ?g {{ ?sop <{sd.ID}> ?id ; <{sd.TITLE}> ?title ; <{sd.SEVERITY}> ?severity ;
                 <{sd.SUMMARY}> ?summary ; <{sd.REQUIREMENTS}> ?requirements }}
}}""",
            sops,
        )
    }
    _add_origins(store, sops, parents)
    # One row per SOP, its chunks packed as ``index:length:text`` each: thousands of matching
    # chunks as rows cost more in building their terms than the query itself. An SOP's graph
    # holds it and its chunks only (``sop_triples``), so the graph names whose chunks they are.
    sop_of = {graphs[iri]: iri for iri in iris}
    rows = store.select(
        f"""SELECT ?g (GROUP_CONCAT(CONCAT(STR(?index), ":", STR(STRLEN(?content)), ":",
                                   ?content); separator="") AS ?chunks) WHERE {{
  GRAPH ?g {{ ?chunk <{sd.CHUNK_INDEX}> ?index ; <{sd.CONTENT}> ?content }}
}} GROUP BY ?g""",
        {"g": [URIRef(graphs[iri]) for iri in iris]},
    )
    for row in rows:
        parent = parents.get(sop_of[str(row["g"])])
        if parent is not None:
            parent.chunks = unpacked_chunks(str(row["chunks"]))
    return ordered(list(parents.values()))


def ordered(sops: list[MatchedSop]) -> list[MatchedSop]:
    """``sops`` most severe first, then by id, each nested rule told which it overrides."""
    for sop in sops:
        if sop.scope_folder is not None:
            sop.overrides = sorted(
                other.sop_id
                for other in sops
                if other.origin == sop.origin
                and other.scope_folder is not None
                and _above(other.scope_folder, sop.scope_folder)
            )
    rank: dict[str, int] = {name: i for i, name in enumerate(SEVERITIES)}
    return sorted(sops, key=lambda s: (rank.get(s.severity, 99), s.sop_id))


def _above(folder: str, inner: str) -> bool:
    """Whether ``folder`` strictly contains ``inner`` ('' is the root)."""
    return folder != inner and (folder == "" or inner.startswith(folder + "/"))


def _add_origins(
    store: GraphStore, sops: dict[str, list[URIRef]], parents: dict[str, MatchedSop]
) -> None:
    """Fill in where each SOP or rule was read from: its path, origin kind, folder and imports.

    One pattern per fact in a UNION, the SOPs bound: as OPTIONAL patterns (in the parents' query
    or a query of their own) they made the assembly six times slower on 2,000 SOPs, and the
    predicates bound as a second VALUES list three times (``bench/assembler.py``; Oxigraph
    evaluated them before the bound SOPs).
    """
    branches = " UNION ".join(
        f"{{ ?sop <{predicate}> ?o BIND(<{predicate}> AS ?p) }}"
        for predicate in (sd.PATH, sd.ORIGIN_KIND, sd.SCOPE_FOLDER, sd.IMPORTED)
    )
    rows = store.select(f"SELECT ?sop ?p ?o WHERE {{ GRAPH ?g {{ {branches} }} }}", sops)
    for row in rows:
        sop = parents.get(str(row["sop"]))
        if sop is None:
            continue
        predicate, value = row["p"], str(row["o"])
        if predicate == sd.PATH:
            sop.path = value
        elif predicate == sd.ORIGIN_KIND:
            sop.origin = value
        elif predicate == sd.SCOPE_FOLDER:
            sop.scope_folder = value
        elif value not in sop.imports:
            # Sorted: rows come in no set order, and the same graph must give the same text.
            sop.imports = sorted([*sop.imports, value])


def unpacked_chunks(packed: str) -> list[str]:
    """Chunk texts in index order from ``index:length:text`` records written back to back
    (``length`` in characters, so a text may hold any character, colons included)."""
    found: list[tuple[int, str]] = []
    at = 0
    while at < len(packed):
        index_end = packed.index(":", at)
        length_end = packed.index(":", index_end + 1)
        length = int(packed[index_end + 1 : length_end])
        found.append((int(packed[at:index_end]), packed[length_end + 1 : length_end + 1 + length]))
        at = length_end + 1 + length
    return [text for _, text in sorted(found)]


def _parent(row: Row, globs: list[str]) -> MatchedSop:
    return MatchedSop(
        sop_id=str(row["id"]),
        severity=str(row["severity"]),
        title=str(row["title"]),
        applies_to=globs,
        summary=str(row["summary"]),
        requirements=[r for r in str(row["requirements"]).split("\n") if r],
    )
