"""Read SOPs back out of the graph for ``semspec sources list`` and ``show``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from rdflib import Literal

from semspec.core.errors import NotFoundError
from semspec.graph.store import GraphStore, Row
from semspec.vocabulary import source as sd


@dataclass(frozen=True)
class SopEntry:
    """One SOP as listed: its id and the metadata the assembler matches on."""

    sop_id: str
    title: str
    category: str
    severity: str
    applies_to: list[str]
    path: str
    chunks: int
    origin: str = "sop"
    """``sop``, or the kind of rule file it was read from (``agents_md``, ``claude_md``,
    ``cursor_rules``, ``copilot``)."""
    imports: list[str] = field(default_factory=list)
    """Files a ``CLAUDE.md`` imported into the rule."""

    def as_dict(self) -> dict[str, object]:
        """Plain data for ``--json``."""
        return asdict(self)


@dataclass(frozen=True)
class SopDetail:
    """One SOP in full: summary, requirements and chunk texts in order."""

    entry: SopEntry
    summary: str
    requirements: list[str]
    chunks: list[str]

    def as_dict(self) -> dict[str, object]:
        """Plain data for ``--json``."""
        return {**self.entry.as_dict(), **{k: v for k, v in asdict(self).items() if k != "entry"}}


def _s(row: Row, name: str) -> str:
    value = row.get(name)
    return "" if value is None else str(value)


_LIST = f"""SELECT ?sop ?id ?title ?category ?severity ?path
       (GROUP_CONCAT(DISTINCT ?glob; SEPARATOR="\\n") AS ?globs)
       (COUNT(DISTINCT ?chunk) AS ?chunks)
WHERE {{
  GRAPH ?g {{
    ?sop a <{sd.SOP}> ; <{sd.ID}> ?id ; <{sd.TITLE}> ?title ; <{sd.CATEGORY}> ?category ;
         <{sd.SEVERITY}> ?severity ; <{sd.PATH}> ?path ; <{sd.APPLIES_TO}> ?glob .
    OPTIONAL {{ ?chunk <{sd.CHUNK_OF}> ?sop }}
  }}
}}
GROUP BY ?sop ?id ?title ?category ?severity ?path
ORDER BY ?id"""

# Origins in a query of their own: as OPTIONALs of the list query they made `sources list`
# of 2,000 SOPs 1.7 times slower; a UNION of the two predicates costs little.
_ORIGINS = f"""SELECT ?sop ?p ?o WHERE {{ GRAPH ?g {{
  {{ ?sop <{sd.ORIGIN_KIND}> ?o BIND(<{sd.ORIGIN_KIND}> AS ?p) }}
  UNION {{ ?sop <{sd.IMPORTED}> ?o BIND(<{sd.IMPORTED}> AS ?p) }} }} }}"""


def _with_origins(store: GraphStore, rows: list[Row]) -> list[SopEntry]:
    origin: dict[str, str] = {}
    imports: dict[str, list[str]] = {}
    # Unbound: two predicates over the whole graph are cheaper than 2,000 bound SOPs.
    for row in store.select(_ORIGINS) if rows else []:
        if row["p"] == sd.ORIGIN_KIND:
            origin[str(row["sop"])] = str(row["o"])
        else:
            imports.setdefault(str(row["sop"]), []).append(str(row["o"]))
    return [
        replace(
            _entry(row),
            origin=origin.get(str(row["sop"]), "sop"),
            imports=sorted(imports.get(str(row["sop"]), [])),
        )
        for row in rows
    ]


def list_sops(store: GraphStore) -> list[SopEntry]:
    """Every SOP in the graph, ordered by id."""
    return _with_origins(store, store.select(_LIST))


def _entry(row: Row) -> SopEntry:
    chunks = row.get("chunks")
    return SopEntry(
        sop_id=_s(row, "id"),
        title=_s(row, "title"),
        category=_s(row, "category"),
        severity=_s(row, "severity"),
        applies_to=sorted(_s(row, "globs").split("\n")),
        path=_s(row, "path"),
        chunks=int(chunks.toPython()) if isinstance(chunks, Literal) else 0,
    )


def show_sop(store: GraphStore, sop_id: str) -> SopDetail:
    """The SOP ``sop_id`` in full; ``NotFoundError`` when no SOP has that id."""
    bound = {"id": Literal(sop_id)}
    rows = store.select(_LIST, bound)
    if not rows:
        raise NotFoundError("SOP", sop_id, hint="run `semspec sources list` to see the ids")
    body = store.select(
        f"""SELECT ?summary ?requirements ?index ?content WHERE {{
  GRAPH ?g {{
    ?sop <{sd.ID}> ?id ; <{sd.SUMMARY}> ?summary ; <{sd.REQUIREMENTS}> ?requirements .
    OPTIONAL {{ ?chunk <{sd.CHUNK_OF}> ?sop ; <{sd.CHUNK_INDEX}> ?index ; <{sd.CONTENT}> ?content }}
  }}
}} ORDER BY ?index""",
        bound,
    )
    requirements = _s(body[0], "requirements")
    return SopDetail(
        entry=_with_origins(store, rows[:1])[0],
        summary=_s(body[0], "summary"),
        requirements=requirements.split("\n") if requirements else [],
        chunks=[_s(r, "content") for r in body if r.get("content") is not None],
    )
