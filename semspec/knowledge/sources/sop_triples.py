"""The triples of one SOP: a parent entity and its chunks, all in the SOP's named graph."""

from __future__ import annotations

from rdflib import Literal

from semspec.graph.store import Triple
from semspec.knowledge.sources.sop_document import SopDocument
from semspec.vocabulary import source as sd
from semspec.vocabulary.applies_to import literal_prefix
from semspec.vocabulary.namespaces import RDF, chunk_iri, sop_iri

INGEST_FORMAT = 3
"""Bumped whenever what ingestion writes changes (2: gitignore-style match prefixes, and no
chunk repeats the requirements; 3: every rule names its origin kind), so the next sync
rewrites SOPs whose files did not change."""


def sop_triples(doc: SopDocument) -> list[Triple]:
    """Parent and chunk triples of ``doc`` in a fixed order."""
    parent = sop_iri(doc.sop_id)
    triples: list[Triple] = [
        (parent, RDF.type, sd.SOP),
        (parent, sd.ID, Literal(doc.sop_id)),
        (parent, sd.TITLE, Literal(doc.title)),
        (parent, sd.CATEGORY, Literal(doc.category)),
        (parent, sd.SEVERITY, Literal(doc.severity)),
        (parent, sd.SUMMARY, Literal(doc.summary)),
        (parent, sd.REQUIREMENTS, Literal("\n".join(doc.requirements))),
        (parent, sd.SOURCE_HASH, Literal(doc.source_hash)),
        (parent, sd.PATH, Literal(doc.path)),
        (parent, sd.INGEST_FORMAT, Literal(INGEST_FORMAT)),
        (parent, sd.ORIGIN_KIND, Literal(doc.origin_kind)),
    ]
    triples += [(parent, sd.IMPORTED, Literal(path)) for path in doc.imports]
    if doc.scope_folder is not None:
        triples.append((parent, sd.SCOPE_FOLDER, Literal(doc.scope_folder)))
    for glob in doc.applies_to:
        triples.append((parent, sd.APPLIES_TO, Literal(glob)))
        triples.append((parent, sd.MATCH_PREFIX, Literal(literal_prefix(glob))))
    for index, chunk in enumerate(doc.chunks):
        node = chunk_iri(doc.sop_id, index)
        triples += [
            (node, RDF.type, sd.SOP_CHUNK),
            (node, sd.CHUNK_OF, parent),
            (node, sd.CHUNK_INDEX, Literal(index)),
            (node, sd.HEADING, Literal(chunk.heading)),
            (node, sd.CONTENT, Literal(chunk.content)),
        ]
    return triples
