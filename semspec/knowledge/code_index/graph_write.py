"""Facts of one file as RDF triples for its own named graph, each fact with an evidence pointer."""

from __future__ import annotations

from rdflib import Literal, URIRef
from rdflib.namespace import RDF

from semspec.graph.store import Triple
from semspec.knowledge.code_index.facts import FileFacts, Symbol
from semspec.vocabulary import code as C


def symbol_fragment(symbol: Symbol) -> str:
    """Fragment of a symbol's IRI: qualified name and line, unique even for redefinitions."""
    return f"sym:{symbol.qualname}@{symbol.start_line}"


class _Writer:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.triples: list[Triple] = []

    def add(self, s: URIRef, p: URIRef, o: URIRef | Literal) -> None:
        self.triples.append((s, p, o))

    def evidence(self, node: URIRef, fragment: str, start: int, end: int) -> None:
        pointer = C.fact_iri(self.facts.path, f"ev:{fragment}")
        self.add(node, C.EVIDENCE, pointer)
        self.add(pointer, RDF.type, C.EVIDENCE_POINTER)
        self.add(pointer, C.PATH, Literal(self.facts.path))
        self.add(pointer, C.START_LINE, Literal(start))
        self.add(pointer, C.END_LINE, Literal(end))
        self.add(pointer, C.SOURCE_HASH, Literal(self.facts.source_hash))

    def fact(self, kind: URIRef, fragment: str, start: int, end: int) -> URIRef:
        node = C.fact_iri(self.facts.path, fragment)
        self.add(node, RDF.type, kind)
        self.evidence(node, fragment, start, end)
        return node


def facts_to_triples(facts: FileFacts) -> list[Triple]:
    """All triples of ``facts``: file, symbols, imports, calls, boundaries and their evidence."""
    w = _Writer(facts)
    path = facts.path
    file_node = C.file_iri(path)
    w.add(file_node, RDF.type, C.FILE)
    w.add(file_node, C.PATH, Literal(path))
    w.add(file_node, C.LANGUAGE, Literal(facts.language))
    w.add(file_node, C.LINE_COUNT, Literal(facts.line_count))
    w.add(file_node, C.SOURCE_HASH, Literal(facts.source_hash))
    w.evidence(file_node, "file", 1, max(facts.line_count, 1))

    symbol_nodes: dict[str, URIRef] = {}
    for symbol in facts.symbols:
        node = w.fact(C.SYMBOL, symbol_fragment(symbol), symbol.start_line, symbol.end_line)
        symbol_nodes.setdefault(symbol.qualname, node)
        w.add(node, C.NAME, Literal(symbol.name))
        w.add(node, C.KIND, Literal(symbol.kind))
        w.add(node, C.SIGNATURE, Literal(symbol.signature))
        w.add(file_node, C.DEFINES, node)
        if symbol.parent is not None:
            w.add(node, C.PARENT, Literal(symbol.parent))
    for symbol in facts.symbols:
        owner = symbol_nodes.get(symbol.parent) if symbol.parent else file_node
        # A method whose type lives in another file (Go, Rust) hangs off the file instead.
        w.add(owner or file_node, C.CONTAINS, C.fact_iri(path, symbol_fragment(symbol)))

    for index, imp in enumerate(facts.imports):
        node = w.fact(C.IMPORT, f"import:{index}", imp.line, imp.end_line)
        w.add(file_node, C.IMPORTS, node)
        w.add(node, C.NAME, Literal(imp.module))
        w.add(node, C.NAME_ORDER, Literal(",".join(imp.names)))
        for name in imp.names:
            w.add(node, C.IMPORTED_NAME, Literal(name))

    for index, call in enumerate(facts.calls):
        node = w.fact(C.CALL, f"call:{index}", call.line, call.line)
        w.add(file_node, C.HAS_CALL, node)
        callee = symbol_nodes[call.callee]
        w.add(node, C.CALLEE, callee)
        if call.caller is not None:
            caller = symbol_nodes[call.caller]
            w.add(node, C.CALLER, caller)
            w.add(caller, C.CALLS, callee)

    for index, boundary in enumerate(facts.boundaries):
        node = w.fact(C.BOUNDARY, f"boundary:{index}", boundary.line, boundary.end_line)
        w.add(file_node, C.HAS_BOUNDARY, node)
        w.add(node, C.KIND, Literal(boundary.kind))
        w.add(node, C.DETAIL, Literal(boundary.detail))
    return w.triples
