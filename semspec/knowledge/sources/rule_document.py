"""Parse one rule file written for another tool into the ``SopDocument`` the graph and the
reviewer's context already know, with its origin (path, kind, imports) kept.

The id of a rule is its path (``src/AGENTS.md``), so a finding can cite it; scope comes from the
kind (``rule_kinds``); severity from a ``severity`` key in the front matter where given, else
the kind's default. Title, summary (a ``description`` key, else the first paragraph),
requirements (items under a ``Requirements`` heading) and sections are read as for SOPs.
"""

from __future__ import annotations

import hashlib

from semspec.knowledge.sources import sop_markdown
from semspec.knowledge.sources.claude_imports import expand_imports
from semspec.knowledge.sources.rule_front_matter import split_rule_front_matter, text_value
from semspec.knowledge.sources.rule_kinds import RuleKind, default_severity, folder_of
from semspec.knowledge.sources.rule_reader import RuleProblem, RuleReader
from semspec.knowledge.sources.sop_document import MAX_CHUNK_TOKENS, SopDocument
from semspec.model.tokens import TokenCounter, count_tokens
from semspec.vocabulary.applies_to import glob_problem
from semspec.vocabulary.review import SEVERITIES

RULE_CATEGORY = "rule"
"""The category of every rule file (an SOP's comes from its front matter)."""


class RuleDocument:
    """A parsed rule file: the document (None for a file with no text), and the imports refused
    on the way, to report as warnings."""

    def __init__(self, doc: SopDocument | None, refused: list[tuple[str, str]]) -> None:
        self.doc = doc
        self.refused = refused


def read_rule(
    reader: RuleReader, path: str, kind: RuleKind, count: TokenCounter = count_tokens
) -> RuleDocument:
    """The rule in the file ``path`` of ``kind``; ``RuleProblem`` naming what is wrong."""
    data = reader.read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleProblem(f"not UTF-8 text (byte {exc.start})") from exc
    meta, body = split_rule_front_matter(text)
    refused: list[tuple[str, str]] = []
    imports: tuple[str, ...] = ()
    digest = hashlib.sha256(data)
    if kind.name == "claude_md":
        expanded = expand_imports(reader, path, body, data)
        body, imports, refused = expanded.text, tuple(expanded.imports), expanded.refused
        digest = hashlib.sha256(b"\0".join(expanded.digest_parts))
    globs, _why = kind.scope(path, meta)
    bad = [g for g in globs if glob_problem(g) is not None]
    refused += [(g, f"glob refused: {glob_problem(g)}") for g in bad]
    globs = [g for g in globs if g not in bad]
    if not globs:
        raise RuleProblem("applies to no file (no usable glob in its front matter)")
    severity = text_value(meta, "severity") or default_severity(kind, meta)
    if severity not in SEVERITIES:
        raise RuleProblem(
            f"unknown severity {severity!r} (expected one of {', '.join(SEVERITIES)})"
        )
    parts = sop_markdown.sections(body)
    if not sop_markdown.has_prose(parts):
        return RuleDocument(None, refused)
    summary = text_value(meta, "description") or sop_markdown.first_paragraph(parts)
    doc = SopDocument(
        sop_id=path,
        path=path,
        source_hash=digest.hexdigest(),
        title=sop_markdown.title(parts, path),
        category=RULE_CATEGORY,
        applies_to=tuple(globs),
        severity=severity,
        summary=summary,
        requirements=tuple(sop_markdown.requirements(parts)),
        chunks=tuple(sop_markdown.chunks(parts, MAX_CHUNK_TOKENS, count)),
        origin_kind=kind.name,
        imports=imports,
        scope_folder=folder_of(path) if kind.nested else None,
    )
    return RuleDocument(doc, refused)
