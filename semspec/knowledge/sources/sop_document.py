"""Parse one SOP file (YAML front matter + markdown) into an ``SopDocument``, or say exactly
what is wrong with it."""

from __future__ import annotations

from dataclasses import dataclass

from semspec.core.errors import ConfigError
from semspec.core.yaml_files import parse_yaml
from semspec.knowledge.sources import sop_markdown
from semspec.model.tokens import TokenCounter, count_tokens
from semspec.vocabulary.applies_to import glob_problem
from semspec.vocabulary.review import SEVERITIES

MAX_CHUNK_TOKENS = 400
"""Upper bound of one chunk; small enough that budget trimming works chunk by chunk."""


class SopProblem(Exception):
    """What is wrong with one SOP file (the file name is added by the caller)."""


@dataclass(frozen=True)
class SopDocument:
    """Everything the graph keeps of one SOP file."""

    sop_id: str
    path: str
    source_hash: str
    title: str
    category: str
    applies_to: tuple[str, ...]
    severity: str
    summary: str
    requirements: tuple[str, ...]
    chunks: tuple[sop_markdown.Chunk, ...]
    origin_kind: str = "sop"
    """``sop`` for a file of the SOP folder, else the rule-file kind (``rule_kinds``)."""
    imports: tuple[str, ...] = ()
    """Files a ``CLAUDE.md`` imported, in the order they were read."""
    scope_folder: str | None = None
    """The folder a nested rule file (``AGENTS.md``, ``CLAUDE.md``) applies to; None else."""


def split_front_matter(text: str) -> tuple[dict[str, object], str]:
    """The front matter mapping and the body after it."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SopProblem(
            "no front matter: start the file with a '---' block holding "
            "category, applies_to and severity"
        )
    closing = [i for i, line in enumerate(lines) if i > 0 and line.strip() in ("---", "...")]
    if not closing:
        raise SopProblem("bad front matter: the opening '---' has no closing '---'")
    end = closing[0]
    try:
        meta = parse_yaml("".join(lines[1:end]), "front matter", first_line=2).data
    except ConfigError as exc:
        line_no = f" (line {exc.line})" if exc.line is not None else ""
        raise SopProblem(f"bad front matter{line_no}: {exc.problem}") from exc
    if not isinstance(meta, dict):
        raise SopProblem("bad front matter: expected key: value pairs")
    return {str(k): v for k, v in meta.items()}, "".join(lines[end + 1 :])


def _text_field(meta: dict[str, object], name: str, *, required: bool) -> str | None:
    value = meta.get(name)
    if value is None:
        if required:
            raise SopProblem(f"missing {name} in front matter")
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool) or not str(value):
        raise SopProblem(f"{name} must be a non-empty string, got {value!r}")
    return str(value).strip()


def _applies_to(meta: dict[str, object]) -> tuple[str, ...]:
    value = meta.get("applies_to")
    if value is None:
        raise SopProblem("missing applies_to in front matter (a glob such as '*.py' or a list)")
    globs = [value] if isinstance(value, str) else value
    if not isinstance(globs, list) or not globs:
        raise SopProblem(f"applies_to must be a glob or a non-empty list of globs, got {value!r}")
    clean: list[str] = []
    for glob in globs:
        if not isinstance(glob, str) or not glob.strip():
            raise SopProblem(f"applies_to entries must be non-empty strings, got {glob!r}")
        problem = glob_problem(glob.strip())
        if problem is not None:
            raise SopProblem(f"applies_to: {problem} (see docs/sops.md for the glob rules)")
        clean.append(glob.strip())
    return tuple(dict.fromkeys(clean))


def parse_sop(
    text: str,
    *,
    default_id: str,
    path: str,
    source_hash: str,
    count: TokenCounter = count_tokens,
) -> SopDocument:
    """The SOP in ``text``; raises ``SopProblem`` naming the first thing that is wrong."""
    meta, body = split_front_matter(text)
    category = _text_field(meta, "category", required=True)
    severity = _text_field(meta, "severity", required=True)
    if severity not in SEVERITIES:
        raise SopProblem(f"unknown severity {severity!r} (expected one of {', '.join(SEVERITIES)})")
    applies_to = _applies_to(meta)
    sop_id = _text_field(meta, "id", required=False) or default_id
    parts = sop_markdown.sections(body)
    if not sop_markdown.has_prose(parts):
        raise SopProblem("no body: add the SOP text after the front matter")
    chunks = sop_markdown.chunks(parts, MAX_CHUNK_TOKENS, count)
    summary = _text_field(meta, "summary", required=False) or sop_markdown.first_paragraph(parts)
    assert category is not None and severity is not None
    return SopDocument(
        sop_id=sop_id,
        path=path,
        source_hash=source_hash,
        title=sop_markdown.title(parts, sop_id),
        category=category,
        applies_to=applies_to,
        severity=severity,
        summary=summary,
        requirements=tuple(sop_markdown.requirements(parts)),
        chunks=tuple(chunks),
    )
