"""The IRI namespaces of semspec's knowledge graph and the names of its per-source graphs.

Every term lives under ``urn:semspec:`` (no borrowed domains) except W3C PROV. One named graph
holds one source (an SOP file, a decision, a convention) so replacing a source is one
transaction. These IRIs are an API: never rename after release.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from rdflib import Namespace, URIRef
from rdflib.namespace import PROV, RDF, RDFS

SEMSPEC: Final = Namespace("urn:semspec:")
"""Root of every semspec term; predicates carry dotted names such as ``source.doc.severity``."""

__all__ = ["PROV", "RDF", "RDFS", "SEMSPEC"]

SOP_GRAPH_PREFIX: Final = "urn:semspec:graph:sop:"
"""Named graph of one SOP file: this prefix + the quoted SOP id."""
DECISION_GRAPH_PREFIX: Final = "urn:semspec:graph:decision:"
"""Named graph of one decision: this prefix + the decision's key."""
CONVENTION_GRAPH_PREFIX: Final = "urn:semspec:graph:convention:"
"""Named graph of one convention: this prefix + project and name."""


def local(text: str) -> str:
    """``text`` made safe as the tail of an IRI (stable: the same text gives the same tail)."""
    return quote(text, safe="._-~/:")


def sop_graph(sop_id: str) -> str:
    """Named graph holding the SOP ``sop_id`` and its chunks."""
    return SOP_GRAPH_PREFIX + local(sop_id)


def sop_iri(sop_id: str) -> URIRef:
    """IRI of the SOP parent entity ``sop_id``."""
    return URIRef(f"urn:semspec:sop:{local(sop_id)}")


def chunk_iri(sop_id: str, index: int) -> URIRef:
    """IRI of chunk ``index`` of the SOP ``sop_id``."""
    return URIRef(f"urn:semspec:sop:{local(sop_id)}#chunk-{index}")


def plan_iri(plan_id: str) -> URIRef:
    """IRI of the plan ``plan_id``."""
    return URIRef(f"urn:semspec:plan:{local(plan_id)}")


def task_iri(task_id: str) -> URIRef:
    """IRI of the task ``task_id``."""
    return URIRef(f"urn:semspec:task:{local(task_id)}")


def decision_iri(task_id: str, key: str) -> URIRef:
    """IRI of the decision ``key`` of the task ``task_id``."""
    return URIRef(f"urn:semspec:task:{local(task_id)}/decision/{local(key)}")


def convention_iri(project: str, key: str) -> URIRef:
    """IRI of the convention ``key`` of ``project``."""
    return URIRef(f"urn:semspec:convention:{local(project)}:{local(key)}")
