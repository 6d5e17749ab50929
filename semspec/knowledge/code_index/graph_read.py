"""Facts of indexed files read back from the store: what summaries and meaning packs are made of."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rdflib import URIRef
from rdflib.namespace import RDF
from rdflib.term import Node

from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.facts import (
    Boundary,
    Call,
    FileFacts,
    Import,
    Symbol,
    normalized,
)
from semspec.vocabulary import code as C

Properties = dict[Node, list[Node]]


def stored_hashes(store: GraphStore) -> dict[str, str]:
    """Source hash of every indexed file, keyed by repo-relative path."""
    rows = store.select(
        f"SELECT ?g ?path ?hash WHERE {{ GRAPH ?g {{ ?f a <{C.FILE}> ; "
        f"<{C.PATH}> ?path ; <{C.SOURCE_HASH}> ?hash }} }}"
    )
    hashes: dict[str, str] = {}
    for row in rows:
        if str(row["g"]).startswith(C.CODE_GRAPH_PREFIX):
            hashes[str(row["path"])] = str(row["hash"])
    return hashes


def _subjects(rows: Iterable[dict[str, Node | None]]) -> dict[str, dict[Node, Properties]]:
    by_graph: dict[str, dict[Node, Properties]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for row in rows:
        s, p, o = row["s"], row["p"], row["o"]
        if s is not None and p is not None and o is not None:
            by_graph[str(row["g"])][s][p].append(o)
    return by_graph


def _one(props: Properties, predicate: URIRef) -> str:
    values = props.get(predicate, [])
    return str(values[0]) if values else ""


def _span(nodes: dict[Node, Properties], props: Properties) -> tuple[int, int]:
    pointer = nodes.get(props.get(C.EVIDENCE, [URIRef("urn:none")])[0], {})
    start = int(_one(pointer, C.START_LINE) or 0)
    return start, int(_one(pointer, C.END_LINE) or start)


def _facts(nodes: dict[Node, Properties]) -> FileFacts | None:
    by_type: dict[Node, list[Properties]] = defaultdict(list)
    names: dict[Node, str] = {}
    for subject, props in nodes.items():
        for rdf_type in props.get(RDF.type, []):
            by_type[rdf_type].append(props)
        if C.SYMBOL in props.get(RDF.type, []):
            owner = _one(props, C.PARENT)
            names[subject] = f"{owner}.{_one(props, C.NAME)}" if owner else _one(props, C.NAME)
    if not by_type[C.FILE]:
        return None
    file_props = by_type[C.FILE][0]
    facts = FileFacts(
        path=_one(file_props, C.PATH),
        language=_one(file_props, C.LANGUAGE),
        source_hash=_one(file_props, C.SOURCE_HASH),
        line_count=int(_one(file_props, C.LINE_COUNT) or 0),
    )
    for props in by_type[C.SYMBOL]:
        start, end = _span(nodes, props)
        parent = _one(props, C.PARENT) or None
        kind = _one(props, C.KIND)
        signature = _one(props, C.SIGNATURE)
        facts.symbols.append(Symbol(_one(props, C.NAME), kind, signature, start, end, parent))  # type: ignore[arg-type]
    for props in by_type[C.IMPORT]:
        start, end = _span(nodes, props)
        order = _one(props, C.NAME_ORDER)
        facts.imports.append(
            Import(_one(props, C.NAME), tuple(order.split(",")) if order else (), start, end)
        )
    for props in by_type[C.CALL]:
        start, _ = _span(nodes, props)
        caller = props.get(C.CALLER)
        callee = names.get(props.get(C.CALLEE, [URIRef("urn:none")])[0], "")
        facts.calls.append(Call(names.get(caller[0]) if caller else None, callee, start))
    for props in by_type[C.BOUNDARY]:
        start, end = _span(nodes, props)
        kind = _one(props, C.KIND)
        facts.boundaries.append(Boundary(kind, _one(props, C.DETAIL), start, end))  # type: ignore[arg-type]
    return normalized(facts)


def read_facts(store: GraphStore, paths: Iterable[str]) -> dict[str, FileFacts]:
    """Facts of those ``paths`` that are indexed, keyed by path (one query for all of them)."""
    wanted = sorted(set(paths))
    if not wanted:
        return {}
    rows = store.select(
        "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
        {"g": [URIRef(C.code_graph(p)) for p in wanted]},
    )
    found: dict[str, FileFacts] = {}
    for nodes in _subjects(rows).values():
        facts = _facts(nodes)
        if facts is not None:
            found[facts.path] = facts
    return {p: found[p] for p in wanted if p in found}
