"""Terms of source documents (``source.doc.*``): SOP parent entities and their chunks.

A parent carries what the reviewer always sees (summary, requirements) and what the assembler
matches on (applies_to, severity); chunks carry the body in order. These IRIs are an API.
"""

from __future__ import annotations

from typing import Final

from semspec.vocabulary.namespaces import SEMSPEC

SOP: Final = SEMSPEC["class.SOP"]
"""Class of an SOP parent entity (one per markdown file)."""
SOP_CHUNK: Final = SEMSPEC["class.SOPChunk"]
"""Class of one chunk of an SOP body."""

ID: Final = SEMSPEC["source.doc.id"]
"""Stable id of the SOP (front matter ``id`` or the file's path under the SOP folder)."""
TITLE: Final = SEMSPEC["source.doc.title"]
"""The SOP's first heading (or its id when it has none)."""
CATEGORY: Final = SEMSPEC["source.doc.category"]
"""Kind of document, e.g. ``sop`` (vs. spec, datasheet)."""
APPLIES_TO: Final = SEMSPEC["source.doc.applies_to"]
"""One gitignore-style glob per triple, matched against repo-relative task paths
(``semspec.vocabulary.applies_to``)."""
MATCH_PREFIX: Final = SEMSPEC["source.doc.match_prefix"]
"""``applies_to.literal_prefix`` of each glob: a path can match the glob only when one of its
``lookup_keys`` starts with it (an exact-lookup pre-filter)."""
SEVERITY: Final = SEMSPEC["source.doc.severity"]
"""``error``, ``warning`` or ``info``: the share of chunk budget the SOP competes for."""
SUMMARY: Final = SEMSPEC["source.doc.summary"]
"""Short summary (front matter ``summary`` or the first paragraph); always in context."""
REQUIREMENTS: Final = SEMSPEC["source.doc.requirements"]
"""Items under the Requirements heading, in order, one per line; always in context."""
CONTENT: Final = SEMSPEC["source.doc.content"]
"""Text of one chunk."""
HEADING: Final = SEMSPEC["source.doc.heading"]
"""Heading of the section a chunk comes from."""
CHUNK_INDEX: Final = SEMSPEC["source.doc.chunk_index"]
"""Position of a chunk in its SOP, from 0."""
CHUNK_OF: Final = SEMSPEC["source.doc.chunk_of"]
"""Chunk → its SOP parent."""
SOURCE_HASH: Final = SEMSPEC["source.doc.source_hash"]
"""sha256 of the file's bytes; unchanged hash means nothing to re-ingest."""
PATH: Final = SEMSPEC["source.doc.path"]
"""Repo-relative path of the source file."""
INGEST_FORMAT: Final = SEMSPEC["source.doc.ingest_format"]
"""Version of the ingestion that wrote the SOP; an older one is re-ingested by the next sync."""
ORIGIN_KIND: Final = SEMSPEC["source.doc.origin_kind"]
"""Where the rule comes from: ``sop`` (the SOP folder) or a rule-file kind such as
``agents_md``, ``claude_md``, ``cursor_rules``, ``copilot`` (``knowledge.sources.rule_kinds``)."""
IMPORTED: Final = SEMSPEC["source.doc.imported"]
"""One repo-relative path per triple: a file a ``CLAUDE.md`` imported into the rule."""
SCOPE_FOLDER: Final = SEMSPEC["source.doc.scope_folder"]
"""The folder a nested rule file (``AGENTS.md``, ``CLAUDE.md``) applies to ('' at the root);
of two that apply to one file, the deeper one wins where they disagree."""
