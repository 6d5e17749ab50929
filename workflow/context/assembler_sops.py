"""The SOP part of the reviewer's context: which SOPs apply to the task files (two queries) and
how their chunks share the SOP budget by severity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from posixpath import basename

from rdflib import Literal

from vocabulary import source as sd
from vocabulary.applies_to import any_matches
from vocabulary.namespaces import SOP_GRAPH_PREFIX
from vocabulary.store import GraphStore, Row
from workflow.context.assembler_tokens import TokenCounter

SEVERITY_SHARES = {"error": 0.50, "warning": 0.35, "info": 0.15}
"""Share of the chunk budget each severity starts with; unused share flows to the next."""


@dataclass
class MatchedSop:
    """An SOP that applies to the task: its always-included parent text and its chunks."""

    sop_id: str
    severity: str
    parent: str
    chunks: list[str] = field(default_factory=list)
    taken: int = 0


def _values(var: str, items: Sequence[str]) -> str:
    return f"VALUES ?{var} {{ {' '.join(Literal(i).n3() for i in items)} }}"


def matching_sops(store: GraphStore, files: Sequence[str]) -> list[MatchedSop]:
    """SOPs whose ``applies_to`` matches a task file, most severe first, then by id."""
    if not files:
        return []
    keys = {*files, *(basename(f) for f in files)}
    # A glob can only match a path that starts with the glob's literal prefix, so every prefix
    # of every key is looked up exactly (an index hit, not a scan); fnmatch then decides.
    prefixes = sorted({key[:end] for key in keys for end in range(len(key) + 1)})
    rows = store.select(
        f"""SELECT ?sop ?glob WHERE {{
  {{ SELECT DISTINCT ?sop WHERE {{
      {_values("prefix", prefixes)}
      GRAPH ?g {{ ?sop <{sd.MATCH_PREFIX}> ?prefix }}
  }} }}
  GRAPH ?h {{ ?sop <{sd.APPLIES_TO}> ?glob }}
  FILTER(STRSTARTS(STR(?h), "{SOP_GRAPH_PREFIX}"))
}}"""
    )
    globs: dict[str, list[str]] = {}
    for row in rows:
        globs.setdefault(str(row["sop"]), []).append(str(row["glob"]))
    matched = sorted(iri for iri, g in globs.items() if any_matches(g, files))
    if not matched:
        return []
    return _load(store, matched, globs)


def _load(store: GraphStore, iris: list[str], globs: dict[str, list[str]]) -> list[MatchedSop]:
    values = "VALUES ?sop { " + " ".join(f"<{i}>" for i in iris) + " }"
    rows = store.select(
        f"""SELECT ?sop ?id ?title ?severity ?summary ?requirements ?index ?content WHERE {{
  {values}
  GRAPH ?g {{
    {{ ?sop <{sd.ID}> ?id ; <{sd.TITLE}> ?title ; <{sd.SEVERITY}> ?severity ;
           <{sd.SUMMARY}> ?summary ; <{sd.REQUIREMENTS}> ?requirements }}
    UNION
    {{ ?chunk <{sd.CHUNK_OF}> ?sop ; <{sd.CHUNK_INDEX}> ?index ; <{sd.CONTENT}> ?content }}
  }}
}}"""
    )
    parents: dict[str, MatchedSop] = {}
    chunks: dict[str, list[tuple[int, str]]] = {}
    for row in rows:
        sop = str(row["sop"])
        if row.get("id") is not None:
            parents[sop] = MatchedSop(
                sop_id=str(row["id"]),
                severity=str(row["severity"]),
                parent=_parent_text(row, sorted(globs[sop])),
            )
        else:
            index = row["index"]
            number = int(index.toPython()) if isinstance(index, Literal) else 0
            chunks.setdefault(sop, []).append((number, str(row["content"])))
    for sop, found in chunks.items():
        if sop in parents:
            parents[sop].chunks = [text for _, text in sorted(found)]
    rank = {name: i for i, name in enumerate(sd.SEVERITIES)}
    return sorted(parents.values(), key=lambda s: (rank.get(s.severity, 99), s.sop_id))


def _parent_text(row: Row, globs: list[str]) -> str:
    lines = [
        f"### SOP {row['id']}: {row['title']} ({row['severity']})",
        f"Applies to: {', '.join(globs)}",
    ]
    if str(row["summary"]):
        lines.append(f"Summary: {row['summary']}")
    requirements = [r for r in str(row["requirements"]).split("\n") if r]
    if requirements:
        lines.append("Requirements:")
        lines += [f"{i}. {r}" for i, r in enumerate(requirements, start=1)]
    return "\n".join(lines)


def allocate_chunks(sops: list[MatchedSop], budget: int, count: TokenCounter) -> int:
    """Take chunks in order within each severity's share (unused share flows on to the next
    severity, and what info leaves goes back to the most severe); returns tokens used."""
    used = 0
    carry = 0
    for severity in sd.SEVERITIES:
        allowance = int(budget * SEVERITY_SHARES[severity]) + carry
        spent = _fill([s for s in sops if s.severity == severity], allowance, count)
        used += spent
        carry = allowance - spent
    # Left over after info: offered again from the most severe SOPs down.
    for severity in sd.SEVERITIES:
        if budget - used <= 0:
            break
        used += _fill([s for s in sops if s.severity == severity], budget - used, count)
    return used


def _fill(sops: list[MatchedSop], allowance: int, count: TokenCounter) -> int:
    # Round-robin by chunk position, so every SOP gets its first chunk before any gets a third;
    # an SOP stops at its first chunk that does not fit, so no SOP has a gap.
    spent = 0
    stopped: set[str] = set()
    depth = max((len(s.chunks) for s in sops), default=0)
    for position in range(depth):
        for sop in sops:
            if sop.sop_id in stopped or sop.taken != position or position >= len(sop.chunks):
                continue
            cost = count(sop.chunks[position]) + 1
            if spent + cost > allowance:
                stopped.add(sop.sop_id)
                continue
            spent += cost
            sop.taken += 1
    return spent
