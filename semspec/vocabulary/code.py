"""Terms of the code meaning graph (seed 004): files, symbols, relations and evidence pointers.

Predicates carry dotted names under ``urn:semspec:`` (``code.defines``, ``code.evidence.path``)
like the rest of the vocabulary. Every fact node (file, symbol, import, call, boundary) points
with ``EVIDENCE`` at an evidence node holding the repo-relative ``PATH``, ``START_LINE`` and
``END_LINE`` and the file's ``SOURCE_HASH``, so a reader can fetch the exact lines and tell when
they went stale. One named graph holds one file. These IRIs are an API: never rename them.
"""

from __future__ import annotations

from typing import Final

from rdflib import URIRef

from semspec.vocabulary.namespaces import SEMSPEC, local

CODE_GRAPH_PREFIX: Final = "urn:semspec:graph:code:"
"""Named graph of one source file: this prefix + the quoted repo-relative path."""

# Classes of fact nodes.
FILE: Final = SEMSPEC["class.CodeFile"]
"""Class of a source file."""
SYMBOL: Final = SEMSPEC["class.CodeSymbol"]
"""Class of a function, class/type or method."""
IMPORT: Final = SEMSPEC["class.CodeImport"]
"""Class of one import statement."""
CALL: Final = SEMSPEC["class.CodeCall"]
"""Class of one call site between two symbols of a file."""
BOUNDARY: Final = SEMSPEC["class.CodeBoundary"]
"""Class of a boundary: CLI entry, HTTP route, env var or config file."""
EVIDENCE_POINTER: Final = SEMSPEC["class.EvidencePointer"]
"""Class of an evidence pointer: a path, a line span and the file's source hash."""

# Relations between fact nodes.
DEFINES: Final = SEMSPEC["code.defines"]
"""File → each symbol written in it."""
CONTAINS: Final = SEMSPEC["code.contains"]
"""File → its top-level symbols; class → its methods and nested classes."""
IMPORTS: Final = SEMSPEC["code.imports"]
"""File → one of its import nodes."""
CALLS: Final = SEMSPEC["code.calls"]
"""Symbol → a symbol of the same file it calls (best effort)."""
HAS_CALL: Final = SEMSPEC["code.call"]
"""File → a call node (caller, callee and the call site's evidence)."""
CALLER: Final = SEMSPEC["code.call.caller"]
"""Call node → the calling symbol (absent for calls from the module body)."""
CALLEE: Final = SEMSPEC["code.call.callee"]
"""Call node → the called symbol."""
HAS_BOUNDARY: Final = SEMSPEC["code.boundary"]
"""File → one of its boundary nodes."""

# Facets of fact nodes.
LANGUAGE: Final = SEMSPEC["code.file.language"]
"""Language of a file: python, go, javascript, typescript, tsx, rust or java."""
LINE_COUNT: Final = SEMSPEC["code.file.lines"]
"""Number of lines in a file."""
NAME: Final = SEMSPEC["code.name"]
"""Name of a symbol, or the module of an import."""
KIND: Final = SEMSPEC["code.kind"]
"""Kind of a symbol (function, class, method) or of a boundary (cli_entry, http_route, ...)."""
SIGNATURE: Final = SEMSPEC["code.symbol.signature"]
"""Head of a symbol's definition: parameters with annotations and defaults, bases, returns."""
PARENT: Final = SEMSPEC["code.symbol.parent"]
"""Qualified name of the class or type enclosing a method or nested class."""
IMPORTED_NAME: Final = SEMSPEC["code.import.name"]
"""One name taken from an imported module (one per triple)."""
NAME_ORDER: Final = SEMSPEC["code.import.names"]
"""The imported names in source order, joined by commas (so readers keep the order)."""
DETAIL: Final = SEMSPEC["code.boundary.detail"]
"""What a boundary is: ``GET /users``, ``PORT``, ``config.yaml``, ``command serve``."""

# The evidence pointer.
EVIDENCE: Final = SEMSPEC["code.evidence"]
"""Fact node → its evidence pointer."""
PATH: Final = SEMSPEC["code.evidence.path"]
"""Repo-relative path (``/`` separators) of the file the evidence is in."""
START_LINE: Final = SEMSPEC["code.evidence.start_line"]
"""First line (1-based) of the evidence span."""
END_LINE: Final = SEMSPEC["code.evidence.end_line"]
"""Last line (1-based, inclusive) of the evidence span."""
SOURCE_HASH: Final = SEMSPEC["code.evidence.source_hash"]
"""SHA-256 hex of the file's bytes when indexed; a different hash means stale evidence."""


def code_graph(path: str) -> str:
    """Named graph holding the facts of the file at repo-relative ``path``."""
    return CODE_GRAPH_PREFIX + local(path)


def file_iri(path: str) -> URIRef:
    """IRI of the file node of repo-relative ``path``."""
    return URIRef(f"urn:semspec:code:{local(path)}")


def fact_iri(path: str, fragment: str) -> URIRef:
    """IRI of a fact node of the file at ``path``; ``fragment`` is unique within the file."""
    return URIRef(f"urn:semspec:code:{local(path)}#{local(fragment)}")
