"""The graph store behaves the same on Oxigraph files, a real Oxigraph SPARQL server and rdflib
in memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from semspec.core.config.models import GraphConfig
from semspec.core.errors import InputError
from semspec.graph.access import open_store
from semspec.graph.store import GraphStore, Triple, memory_store
from tests.support.servers import OxigraphServer

S, P, Q = URIRef("urn:test:s"), URIRef("urn:test:p"), URIRef("urn:test:q")


@pytest.fixture(scope="module")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphServer]:
    server = OxigraphServer(tmp_path_factory.mktemp("oxigraph") / "db")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["embedded", "sparql", "memory"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GraphStore]:
    if request.param == "embedded":
        opened = open_store(GraphConfig(), tmp_path)
    elif request.param == "sparql":
        server: OxigraphServer = request.getfixturevalue("oxigraph_server")
        opened = open_store(server.config(), tmp_path)
        opened.update("DROP SILENT ALL")
    else:
        opened = memory_store()
    try:
        yield opened
    finally:
        opened.close()


def _values(store: GraphStore, graph: str) -> list[str]:
    rows = store.select(f"SELECT ?o WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }} ORDER BY ?o")
    return [str(r["o"]) for r in rows]


def test_replace_graph_swaps_the_whole_content_of_one_graph(store: GraphStore) -> None:
    store.replace_graph("urn:test:g:a", [(S, P, Literal("one")), (S, P, Literal("two"))])
    store.replace_graph("urn:test:g:b", [(S, P, Literal("other"))])
    store.replace_graph("urn:test:g:a", [(S, P, Literal("three"))])
    assert _values(store, "urn:test:g:a") == ["three"]
    assert _values(store, "urn:test:g:b") == ["other"]


def test_a_failing_replacement_keeps_the_old_content(store: GraphStore) -> None:
    store.replace_graph("urn:test:g:a", [(S, P, Literal("kept"))])

    def broken() -> Iterator[Triple]:
        yield (S, P, Literal("new"))
        raise OSError("source vanished")

    with pytest.raises(OSError):
        store.replace_graph("urn:test:g:a", broken())
    with pytest.raises(InputError):
        store.replace_graph("urn:test:g:a", [(S, P, Literal("new")), (S, P, object())])  # type: ignore[list-item]
    assert _values(store, "urn:test:g:a") == ["kept"]


def test_graphs_lists_named_graphs_by_prefix_in_order(store: GraphStore) -> None:
    for name in ["urn:test:g:b", "urn:test:g:a", "urn:other:x"]:
        store.replace_graph(name, [(S, P, Literal(name))])
    assert store.graphs("urn:test:") == ["urn:test:g:a", "urn:test:g:b"]
    assert store.graphs() == ["urn:other:x", "urn:test:g:a", "urn:test:g:b"]


def test_drop_graph_removes_only_that_graph_and_ignores_missing_ones(store: GraphStore) -> None:
    store.replace_graph("urn:test:g:a", [(S, P, Literal("a"))])
    store.replace_graph("urn:test:g:b", [(S, P, Literal("b"))])
    store.drop_graph("urn:test:g:a")
    store.drop_graph("urn:test:g:missing")
    assert store.graphs("urn:test:") == ["urn:test:g:b"]


def test_select_returns_plain_literals_typed_numbers_and_none_for_unbound(
    store: GraphStore,
) -> None:
    text = 'a "quoted"\nmulti-line \\ text'
    store.replace_graph("urn:test:g:a", [(S, P, Literal(text)), (S, Q, Literal(7))])
    store.replace_graph("urn:test:g:b", [(URIRef("urn:test:t"), P, Literal("lonely"))])
    rows = store.select(
        f"SELECT ?s ?o ?n WHERE {{ GRAPH ?g {{ ?s <{P}> ?o OPTIONAL {{ ?s <{Q}> ?n }} }} }} "
        "ORDER BY ?s"
    )
    assert rows == [
        {"s": S, "o": Literal(text), "n": Literal(7)},
        {"s": URIRef("urn:test:t"), "o": Literal("lonely"), "n": None},
    ]


def test_update_runs_sparql_updates(store: GraphStore) -> None:
    store.update(f'INSERT DATA {{ GRAPH <urn:test:g:u> {{ <{S}> <{P}> "via update" }} }}')
    assert _values(store, "urn:test:g:u") == ["via update"]


def test_bad_sparql_is_an_input_error(store: GraphStore) -> None:
    with pytest.raises(InputError, match="SPARQL"):
        store.select("SELECT WHERE nonsense")


def test_an_invalid_graph_name_is_refused(store: GraphStore) -> None:
    with pytest.raises(InputError, match="not a valid IRI"):
        store.replace_graph("has space", [(S, P, Literal("x"))])


def test_embedded_store_keeps_its_data_across_reopen(tmp_path: Path) -> None:
    first = open_store(GraphConfig(), tmp_path)
    first.replace_graph("urn:test:g:a", [(S, P, Literal("durable"))])
    first.close()
    second = open_store(GraphConfig(), tmp_path)
    try:
        assert _values(second, "urn:test:g:a") == ["durable"]
        assert (tmp_path / ".semspec" / "graph").is_dir()
    finally:
        second.close()
