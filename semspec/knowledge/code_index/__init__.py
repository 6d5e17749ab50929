"""The code meaning graph: per-file facts (symbols, imports, calls, boundaries) with evidence
pointers, kept incrementally in one named graph per file, and read back as summaries and packs.
"""

from semspec.knowledge.code_index.facts import (
    Boundary,
    Call,
    FileFacts,
    Import,
    SourceSyntaxError,
    Symbol,
)
from semspec.knowledge.code_index.indexer import Failure, IndexReport, index_repository
from semspec.knowledge.code_index.languages import extract_facts, language_of
from semspec.knowledge.code_index.pack import Pack, meaning_pack, pack_facts
from semspec.knowledge.code_index.pack_read import pack_evidence
from semspec.knowledge.code_index.summary import file_summaries, file_summary

__all__ = [
    "Boundary",
    "Call",
    "Failure",
    "FileFacts",
    "Import",
    "IndexReport",
    "Pack",
    "SourceSyntaxError",
    "Symbol",
    "extract_facts",
    "file_summaries",
    "file_summary",
    "index_repository",
    "language_of",
    "meaning_pack",
    "pack_evidence",
    "pack_facts",
]
