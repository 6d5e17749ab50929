"""Which extractor reads which file, by extension, and the one entry point ``extract_facts``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import PurePosixPath

from semspec.knowledge.code_index.facts import FileFacts, normalized
from semspec.knowledge.code_index.go_extract import GoExtractor
from semspec.knowledge.code_index.java_extract import JavaExtractor
from semspec.knowledge.code_index.js_extract import (
    javascript_extractor,
    tsx_extractor,
    typescript_extractor,
)
from semspec.knowledge.code_index.python_extract import extract_python
from semspec.knowledge.code_index.rust_extract import RustExtractor

Extract = Callable[[str, bytes, str], FileFacts]

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".java": "java",
}


def language_of(path: str) -> str | None:
    """The language of a file by its extension, or ``None`` when no extractor reads it."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


def source_hash(source: bytes) -> str:
    """SHA-256 hex digest of the file's bytes: the evidence pointers' freshness check."""
    return hashlib.sha256(source).hexdigest()


@cache
def _extractor(language: str) -> Extract:
    # Parsers are built once per process; building one loads the grammar.
    if language == "python":
        return extract_python
    factories: dict[str, Callable[[], Extract]] = {
        "go": lambda: GoExtractor().extract,
        "javascript": lambda: javascript_extractor().extract,
        "typescript": lambda: typescript_extractor().extract,
        "tsx": lambda: tsx_extractor().extract,
        "rust": lambda: RustExtractor().extract,
        "java": lambda: JavaExtractor().extract,
    }
    return factories[language]()


def extract_facts(path: str, source: bytes) -> FileFacts:
    """Facts of the file at repo-relative ``path`` holding ``source``.

    Raises ``SourceSyntaxError`` when the parser rejects the file and ``ValueError`` for a path
    no extractor reads (check ``language_of`` first).
    """
    language = language_of(path)
    if language is None:
        raise ValueError(f"no extractor for {path}")
    return normalized(_extractor(language)(path, source, source_hash(source)))
