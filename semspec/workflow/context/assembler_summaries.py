"""File summaries from the code meaning graph, for callers that do not pass their own.

Only the shared vocabulary is used (``semspec.vocabulary.code``): a file's language and the
signatures of the symbols it defines, in line order. Files the indexer has not seen get no summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from rdflib import URIRef

from semspec.graph.store import GraphStore
from semspec.vocabulary import code as C


def code_graph_summaries(store: GraphStore, paths: Sequence[str]) -> dict[str, str]:
    """Summary text per indexed path among ``paths`` (absent paths are left out)."""
    if not paths:
        return {}
    # Each file's own named graph is bound up front: scoped lookups instead of a join over
    # every indexed file (two plain queries beat one with OPTIONAL symbols).
    graphs = {"g": [URIRef(C.code_graph(p)) for p in sorted(set(paths))]}
    files = store.select(
        f"""SELECT ?file ?path ?language WHERE {{
  GRAPH ?g {{
    ?file a <{C.FILE}> ; <{C.PATH}> ?path .
    OPTIONAL {{ ?file <{C.LANGUAGE}> ?language }}
  }}
}}""",
        graphs,
    )
    symbols = store.select(
        f"""SELECT ?file ?line ?signature WHERE {{
  GRAPH ?g {{
    ?file a <{C.FILE}> ; <{C.DEFINES}> ?symbol .
    ?symbol <{C.SIGNATURE}> ?signature ; <{C.EVIDENCE}> ?ev .
    ?ev <{C.START_LINE}> ?line .
  }}
}}""",
        graphs,
    )
    by_file: dict[str, list[tuple[int, str]]] = {}
    for row in symbols:
        line = row["line"]
        number = int(line.toPython()) if line is not None else 0  # type: ignore[attr-defined]
        by_file.setdefault(str(row["file"]), []).append((number, str(row["signature"])))
    out: dict[str, str] = {}
    for row in files:
        path, language = str(row["path"]), row.get("language")
        lines = [f"{path} ({language})" if language is not None else path]
        lines += [f"  L{n} {sig}" for n, sig in sorted(by_file.get(str(row["file"]), []))]
        out[path] = "\n".join(lines)
    return dict(sorted(out.items()))
