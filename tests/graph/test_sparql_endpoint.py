"""The graph store over the Oxigraph server (``semspec/graph/sparql_endpoint.py``), and embedded
handles shared inside one process: real servers and real store directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import BNode, Literal, URIRef
from rdflib.namespace import XSD

from semspec.core.config.models import GraphConfig, SemspecConfig
from semspec.core.errors import InputError, ServiceError
from semspec.graph.access import open_graph, open_store
from semspec.graph.store import GraphStore, Triple, embedded_store
from semspec.services.graph_server import GraphSpec
from semspec.services.ports import free_port
from semspec.services.supervisor import Supervisor

S, P = URIRef("urn:test:s"), URIRef("urn:test:p")
TERMS: list[Triple] = [
    (S, P, Literal("plain")),
    (S, P, Literal("bonjour", lang="fr")),
    (S, P, Literal(7)),
    (S, P, Literal("2026-01-01", datatype=XSD.date)),
    (S, P, URIRef("urn:test:o")),
]
QUERY = "SELECT ?o ?missing WHERE { GRAPH ?g { ?s ?p ?o OPTIONAL { ?o ?x ?missing } } }"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Supervisor]:
    """The graph service alone, as ``semspec up`` starts it, on a port the test knows."""
    config = SemspecConfig(services={"graph": {"port": free_port()}})
    supervisor = Supervisor(config, tmp_path, specs=[GraphSpec()])
    try:
        supervisor.up()
        yield supervisor
    finally:
        supervisor.down()


def rows(store: GraphStore) -> list[tuple[str, object]]:
    return sorted((row["o"].n3(), row["missing"]) for row in store.select(QUERY))  # type: ignore[union-attr]


def test_the_endpoint_returns_the_same_terms_as_the_files(
    served: Supervisor, tmp_path: Path
) -> None:
    store = open_graph(served.config, tmp_path)
    try:
        store.replace_graph("urn:test:g", TERMS)
        through_server = rows(store)
    finally:
        store.close()
    served.down()
    files = embedded_store(tmp_path / ".semspec" / "graph")
    try:
        assert through_server == rows(files)
    finally:
        files.close()
    assert [missing for _, missing in through_server] == [None] * len(TERMS)


def test_sparql_the_server_rejects_is_bad_input_with_the_servers_reason(
    served: Supervisor, tmp_path: Path
) -> None:
    store = open_graph(served.config, tmp_path)
    try:
        with pytest.raises(InputError, match="rejected the SPARQL"):
            store.select("SELECT ?o WHERE { ?s ?p }")
        with pytest.raises(InputError, match="expected a SELECT"):
            store.select("ASK { ?s ?p ?o }")
    finally:
        store.close()


def test_a_graph_server_that_stopped_is_a_service_error_naming_its_address(
    served: Supervisor, tmp_path: Path
) -> None:
    store = open_graph(served.config, tmp_path)
    query_url = served.status()[0].extra or {}
    served.down()
    try:
        with pytest.raises(ServiceError, match="graph store") as failed:
            store.select(QUERY)
    finally:
        store.close()
    assert query_url["query_url"] in failed.value.message


def test_a_store_kept_open_across_a_server_restart_reconnects(
    served: Supervisor, tmp_path: Path
) -> None:
    store = open_graph(served.config, tmp_path)
    try:
        store.replace_graph("urn:test:g", TERMS[:1])
        before = rows(store)
        served.down()
        served.up()  # same port: both kept-alive connections are stale now
        store.replace_graph("urn:test:g", TERMS[:1])
        assert rows(store) == before
    finally:
        store.close()


def test_handles_on_one_directory_in_one_process_share_the_store(tmp_path: Path) -> None:
    first = embedded_store(tmp_path)
    second = embedded_store(tmp_path)
    first.replace_graph("urn:test:g", [(S, P, BNode("b1"))])
    first.close()
    assert len(second.select(QUERY)) == 1
    second.close()
    # The last close released the directory: it opens again.
    third = embedded_store(tmp_path)
    try:
        assert len(third.select(QUERY)) == 1
    finally:
        third.close()


def test_an_endpoint_named_in_the_config_gets_the_token_of_graph_token_file(
    served: Supervisor, tmp_path: Path
) -> None:
    extra = served.status()[0].extra or {}
    urls = {"query_url": extra["query_url"], "update_url": extra["update_url"]}
    with_token = GraphConfig(mode="sparql", token_file=extra["token_file"], **urls)
    store = open_store(with_token, tmp_path)
    try:
        store.replace_graph("urn:test:g", TERMS[:1])
        assert len(rows(store)) == 1
    finally:
        store.close()
    without = open_store(GraphConfig(mode="sparql", **urls), tmp_path)
    try:
        with pytest.raises(ServiceError, match=r"refused this process \(HTTP 401\)") as refused:
            without.select(QUERY)
    finally:
        without.close()
    assert "graph.token_file" in (refused.value.hint or "")


def test_a_relative_token_file_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="token_file must be an absolute path"):
        GraphConfig(mode="sparql", query_url="http://g/q", update_url="http://g/u", token_file="t")
