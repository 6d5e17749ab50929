"""The ontology parses and documents every term the vocabulary modules define."""

from __future__ import annotations

from pathlib import Path

from rdflib import Graph, URIRef
from rdflib.namespace import RDFS

import semspec.vocabulary as vocabulary
from semspec.vocabulary import semspec_terms, source

ONTOLOGY = Path(vocabulary.__file__).parent / "ontology.ttl"


def _terms() -> dict[str, URIRef]:
    found: dict[str, URIRef] = {}
    for module in (source, semspec_terms):
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, URIRef):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_the_ontology_parses_as_turtle() -> None:
    graph = Graph().parse(ONTOLOGY)
    assert len(graph) > 0


def test_every_vocabulary_constant_has_a_label_and_comment_in_the_ontology() -> None:
    graph = Graph().parse(ONTOLOGY)
    terms = _terms()
    assert len(terms) > 30
    missing = [
        name
        for name, iri in terms.items()
        if graph.value(iri, RDFS.label) is None or graph.value(iri, RDFS.comment) is None
    ]
    assert missing == []


def test_every_term_lives_under_urn_semspec_or_w3c_prov() -> None:
    for name, iri in _terms().items():
        assert str(iri).startswith(("urn:semspec:", "http://www.w3.org/ns/prov#")), name
