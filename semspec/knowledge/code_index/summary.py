"""Short deterministic text summaries of indexed files, for the reviewer's context assembler."""

from __future__ import annotations

from collections.abc import Iterable

from semspec.core.errors import NotFoundError
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.facts import FileFacts, Import
from semspec.knowledge.code_index.graph_read import read_facts


def _span(start: int, end: int) -> str:
    return f"L{start}" if start == end else f"L{start}-{end}"


def _import(imp: Import) -> str:
    return f"{imp.module} ({', '.join(imp.names)})" if imp.names else imp.module


def render_summary(facts: FileFacts) -> str:
    """The summary text of one file's facts: header, imports, boundaries, symbols by line."""
    lines = [f"{facts.path} ({facts.language}, {facts.line_count} lines, #{facts.source_hash[:8]})"]
    if facts.imports:
        lines.append("imports: " + "; ".join(_import(i) for i in facts.imports))
    if facts.boundaries:
        lines.append("boundaries:")
        lines.extend(f"  {b.kind} {b.detail} {_span(b.line, b.end_line)}" for b in facts.boundaries)
    if facts.symbols:
        lines.append("symbols:")
        for symbol in facts.symbols:
            depth = symbol.qualname.count(".") if symbol.parent else 0
            span = _span(symbol.start_line, symbol.end_line)
            lines.append(f"{'  ' * (depth + 1)}{span} {symbol.signature}")
    return "\n".join(lines)


def file_summaries(store: GraphStore, paths: Iterable[str]) -> dict[str, str]:
    """Summaries of those ``paths`` that are indexed, keyed by path; unindexed ones are left out."""
    return {path: render_summary(facts) for path, facts in read_facts(store, paths).items()}


def file_summary(store: GraphStore, path: str) -> str:
    """The summary of one indexed file; raises ``NotFoundError`` if it is not in the graph."""
    found = file_summaries(store, [path])
    if path not in found:
        raise NotFoundError("indexed file", path, hint="run `semspec index` first")
    return found[path]
