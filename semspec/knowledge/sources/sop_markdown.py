"""Split an SOP's markdown body into what the graph keeps: title, summary, requirements and
chunks bounded by headings and a token limit."""

from __future__ import annotations

import re
from dataclasses import dataclass

from semspec.model.tokens import TokenCounter

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    """A heading (empty for text before the first one) and the lines under it."""

    heading: str
    level: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Chunk:
    """One piece of the body, in order."""

    heading: str
    content: str


def sections(body: str) -> list[Section]:
    """The body cut at every heading outside a code fence."""
    found: list[Section] = []
    heading, level = "", 0
    lines: list[str] = []
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            if heading or any(x.strip() for x in lines):
                found.append(Section(heading, level, tuple(lines)))
            heading, level, lines = match.group(2), len(match.group(1)), [line]
        else:
            lines.append(line)
    if heading or any(x.strip() for x in lines):
        found.append(Section(heading, level, tuple(lines)))
    return found


def has_prose(parts: list[Section]) -> bool:
    """True when some line under the headings is not blank."""
    for section in parts:
        body = section.lines[1:] if section.heading else section.lines
        if any(line.strip() for line in body):
            return True
    return False


def title(parts: list[Section], fallback: str) -> str:
    """The first heading's text, or ``fallback`` when the body has none."""
    return next((s.heading for s in parts if s.heading), fallback)


def first_paragraph(parts: list[Section]) -> str:
    """The first run of prose lines (not a heading, list or code fence), joined into one line."""
    for section in parts:
        paragraph: list[str] = []
        in_fence = False
        for line in section.lines:
            if _FENCE.match(line):
                in_fence = not in_fence
                if paragraph:
                    break
                continue
            if in_fence or _HEADING.match(line) or _LIST_ITEM.match(line):
                if paragraph:
                    break
                continue
            if not line.strip():
                if paragraph:
                    break
                continue
            paragraph.append(line.strip())
        if paragraph:
            return " ".join(paragraph)
    return ""


def is_requirements(section: Section) -> bool:
    """True for a section headed ``Requirements`` (any level, any case, optional colon)."""
    return section.heading.strip().rstrip(":").lower() == "requirements"


def _split_requirements(section: Section) -> tuple[list[str], list[str]]:
    """The list items of a Requirements section (continuations joined) and its other lines."""
    items: list[str] = []
    rest: list[str] = []
    current: list[str] | None = None
    for line in section.lines[1:]:
        item = _LIST_ITEM.match(line)
        if item:
            if current:
                items.append(" ".join(current))
            current = [item.group(1).strip()]
        elif current is not None and line.strip() and line.startswith((" ", "\t")):
            current.append(line.strip())
        elif current is not None and not line.strip():
            continue
        else:
            if current is not None:
                items.append(" ".join(current))
                current = None
            rest.append(line)
    if current:
        items.append(" ".join(current))
    return [item for item in items if item], rest


def requirements(parts: list[Section]) -> list[str]:
    """Items of the lists under every ``Requirements`` heading, in order (continuations joined)."""
    return [item for s in parts if is_requirements(s) for item in _split_requirements(s)[0]]


def chunks(parts: list[Section], max_tokens: int, count: TokenCounter) -> list[Chunk]:
    """One chunk per section, sections over ``max_tokens`` split at paragraphs, then lines."""
    out: list[Chunk] = []
    for section in parts:
        lines = section.lines
        if is_requirements(section):
            # The items are the parent's requirements, which the reviewer always gets; a chunk
            # repeating them would put each requirement in the context twice.
            rest = _split_requirements(section)[1]
            if not any(line.strip() for line in rest):
                continue
            lines = (section.lines[0], *rest)
        text = "\n".join(lines).strip()
        if not text:
            continue
        for piece in _bounded(text, max_tokens, count):
            out.append(Chunk(section.heading, piece))
    return out


def _bounded(text: str, max_tokens: int, count: TokenCounter) -> list[str]:
    if count(text) <= max_tokens:
        return [text]
    # Paragraphs first so a chunk reads as whole thoughts; single lines only when a paragraph
    # alone is too big (a long code block or table).
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if count(paragraph) <= max_tokens:
            units.append(paragraph)
        else:
            units.extend(paragraph.splitlines())
    pieces: list[str] = []
    current: list[str] = []
    for unit in units:
        candidate = "\n\n".join([*current, unit])
        if current and count(candidate) > max_tokens:
            pieces.append("\n\n".join(current))
            current = [unit]
        else:
            current.append(unit)
    if current:
        pieces.append("\n\n".join(current))
    return [p.strip() for p in pieces if p.strip()]
