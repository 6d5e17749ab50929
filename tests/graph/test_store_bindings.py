"""Data reaches SPARQL only as bound terms: hostile values find exactly their own rows on every
store, bad terms are refused before anything is sent, and nothing else in the graph changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rdflib import Literal, URIRef
from rdflib.namespace import XSD

from semspec.core.config.models import GraphConfig
from semspec.core.errors import InputError
from semspec.graph.access import open_store
from semspec.graph.sparql_terms import bind, term_text
from semspec.graph.store import GraphStore
from semspec.knowledge.sources.catalog import list_sops, show_sop
from semspec.knowledge.sources.sync import SOP_DIR, sync_sources
from semspec.workflow.context.assembler_sops import matching_sops
from semspec.workflow.knowledge import decisions_for, record_decision
from semspec.workflow.performance_graph import GraphPerformanceHistory
from semspec.workflow.task.context_activities import sop_requirements

# The three-store fixture (embedded, SPARQL endpoint, memory) and its server.
from tests.graph.test_store import oxigraph_server, store  # noqa: F401

S, P = URIRef("urn:test:s"), URIRef("urn:test:p")
SENTINEL = "urn:test:g:sentinel"
HOSTILE = [
    "a>b",
    'a"b',
    "a}b",
    "line\nbreak\r\n",
    "} ; DROP ALL ; {",
    '" } } ; DROP ALL ; INSERT DATA { GRAPH <urn:x> { <urn:x> <urn:x> "x" } } #',
    '"""',
    'ends with a quote"',
    "back\\slash\\",
    "\\u0022 } ; DROP ALL ; {",
    "\\",
    "'''",
]
ALL_QUADS = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g ?s ?p ?o"


@pytest.fixture
def seeded(store: GraphStore) -> GraphStore:  # noqa: F811 (the imported fixture)
    """The three stores of ``tests/graph/test_store.py``, holding a sentinel and the hostile
    values."""
    store.replace_graph(SENTINEL, [(S, P, Literal("keep me"))])
    store.replace_graph(
        "urn:test:g:hostile",
        [(URIRef(f"urn:test:h{i}"), P, Literal(v)) for i, v in enumerate(HOSTILE)],
    )
    return store


def test_hostile_literals_stored_and_bound_find_exactly_their_own_row(seeded: GraphStore) -> None:
    before = seeded.select(ALL_QUADS)
    for i, value in enumerate(HOSTILE):
        rows = seeded.select(
            "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": Literal(value), "p": P}
        )
        assert rows == [{"s": URIRef(f"urn:test:h{i}"), "o": Literal(value)}], value
    several = seeded.select(
        "SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?s",
        {"o": [Literal(v) for v in HOSTILE[:3]]},
    )
    assert [str(r["s"]) for r in several] == ["urn:test:h0", "urn:test:h1", "urn:test:h2"]
    assert seeded.select(ALL_QUADS) == before


def test_a_bound_update_deletes_only_the_bound_triple(seeded: GraphStore) -> None:
    target = HOSTILE[5]
    seeded.update(
        "DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": Literal(target)}
    )
    left = {str(r["o"]) for r in seeded.select(ALL_QUADS)}
    assert left == ({*HOSTILE, "keep me"} - {target})


@pytest.mark.parametrize(
    "term",
    [
        URIRef("urn:a> } ; DROP ALL ; {"),
        URIRef('urn:a"b'),
        URIRef("urn:a\nb"),
        URIRef("urn:a b"),
        URIRef("urn:a\\u003E"),
        URIRef(""),
        Literal("x", datatype=URIRef("urn:t> } ; DROP ALL ; {")),
        "a plain str is not a term",
    ],
)
def test_terms_that_could_break_out_are_refused_before_anything_is_sent(
    seeded: GraphStore, term: object
) -> None:
    before = seeded.select(ALL_QUADS)
    with pytest.raises(InputError):
        seeded.select("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": term})  # type: ignore[dict-item]
    with pytest.raises(InputError):
        seeded.update("DELETE WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": term})  # type: ignore[dict-item]
    with pytest.raises(InputError):
        seeded.replace_graph(SENTINEL, [(S, P, term)])  # type: ignore[list-item]
    assert seeded.select(ALL_QUADS) == before


def test_variable_names_and_queries_without_a_where_group_are_refused() -> None:
    with pytest.raises(InputError, match="variable name"):
        bind("SELECT ?s WHERE { ?s ?p ?o }", {"o } ; DROP ALL ; {": Literal("x")})
    with pytest.raises(InputError, match="WHERE"):
        bind("DROP ALL", {"o": Literal("x")})


def test_literals_are_written_on_one_line_with_their_language_or_datatype() -> None:
    assert term_text(Literal('a"b\nc\\')) == '"a\\"b\\nc\\\\"'
    assert term_text(Literal("chat", lang="fr")) == '"chat"@fr'
    assert term_text(Literal(7)) == f'"7"^^<{XSD.integer}>'
    assert bind("SELECT * WHERE { ?s ?p ?o }", {"o": [Literal(1), S]}) == (
        f'SELECT * WHERE {{\nVALUES ?o {{ "1"^^<{XSD.integer}> <urn:test:s> }}\n ?s ?p ?o }}'
    )


HOSTILE_ID = 'x> } ; DROP ALL ; { "y"\n}'


def test_hostile_sop_ids_paths_and_task_ids_change_nothing_else(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = repo / SOP_DIR / 'odd "} ; DROP ALL ; {'
    folder.mkdir(parents=True)
    front = f"id: {json.dumps(HOSTILE_ID)}\ncategory: sop\napplies_to: '**/*.py'\nseverity: error"
    body = "# Odd\n\nText.\n\n## Requirements\n- Keep } ; DROP ALL ; { out\n"
    (folder / "sop.md").write_text(f"---\n{front}\n---\n{body}")
    graph = open_store(GraphConfig(), tmp_path / "store")
    try:
        graph.replace_graph(SENTINEL, [(S, P, Literal("keep me"))])
        assert sync_sources(graph, repo).failed == []
        [entry] = list_sops(graph)
        sop_id = entry.sop_id
        assert sop_id == HOSTILE_ID
        assert show_sop(graph, sop_id).requirements == ["Keep } ; DROP ALL ; { out"]
        files = ['src/a"} ; DROP ALL ; {.py', "calc.py"]
        assert [m.sop_id for m in matching_sops(graph, files)] == [sop_id]
        assert sop_requirements(graph, files) == [f"[error] {sop_id}: Keep }} ; DROP ALL ; {{ out"]
        record_decision(graph, HOSTILE_ID, HOSTILE_ID, "title", "text", files)
        found = decisions_for(graph, HOSTILE_ID, HOSTILE_ID, files)
        assert [(d.task_id, d.plan_id) for d in found] == [(HOSTILE_ID, HOSTILE_ID)]
        assert decisions_for(graph, None, None, ['src/a"} ; DROP ALL ; {.py']) == found
        assert GraphPerformanceHistory(graph).stats(HOSTILE_ID, "developer").tasks == 0
        sentinel = graph.select(
            "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": URIRef(SENTINEL)}
        )
        assert sentinel == [{"o": Literal("keep me")}]
    finally:
        graph.close()
