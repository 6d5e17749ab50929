"""The front matter of rule files written for other tools, read without a YAML parser.

Cursor's ``.mdc`` files are not strict YAML (``globs: *.ts`` is a YAML alias, an error), and a
rule file is hostile input, so only flat ``key: value`` lines are read: a value is a string (its
quotes removed), a ``[a, b]`` flow list, or a list of ``- item`` lines under an empty value.
Nothing is evaluated, and the block is bounded in lines and characters so a huge or unclosed
block is refused rather than read.
"""

from __future__ import annotations

import re

from semspec.knowledge.sources.rule_reader import RuleProblem

MAX_FRONT_MATTER_LINES = 100
"""Lines a front matter block may span, fences included; real ones have three to six."""
MAX_FRONT_MATTER_CHARS = 8_000
"""Characters a front matter block may hold."""

FrontValue = str | list[str]
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*?)\s*$")
_ITEM = re.compile(r"^\s+-\s*(.*?)\s*$|^-\s+(.*?)\s*$")


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _value(raw: str) -> FrontValue:
    if raw.startswith("[") and raw.endswith("]"):
        return [_unquoted(v.strip()) for v in raw[1:-1].split(",") if v.strip()]
    return _unquoted(raw)


def split_rule_front_matter(text: str) -> tuple[dict[str, FrontValue], str]:
    """The front matter's keys and the body after it; no block gives ``{}`` and the whole
    text. ``RuleProblem`` when a block is unclosed or larger than the bounds."""
    text = text.lstrip("\ufeff")
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n", MAX_FRONT_MATTER_LINES + 1)
    if lines[0].strip() != "---":
        return {}, text
    end = next(
        (i for i, line in enumerate(lines[1:MAX_FRONT_MATTER_LINES], 1) if line.strip() == "---"),
        None,
    )
    if end is None:
        raise RuleProblem(
            f"front matter: no closing '---' within {MAX_FRONT_MATTER_LINES} lines "
            "(close the block, or remove the opening '---')"
        )
    block = lines[1:end]
    if sum(len(line) + 1 for line in block) > MAX_FRONT_MATTER_CHARS:
        raise RuleProblem(f"front matter: more than {MAX_FRONT_MATTER_CHARS} characters")
    meta: dict[str, FrontValue] = {}
    key: str | None = None
    for line in block:
        item = _ITEM.match(line)
        if item and key is not None and isinstance(meta.get(key), list):
            listed = meta[key]
            assert isinstance(listed, list)
            listed.append(_unquoted(item.group(1) or item.group(2) or ""))
            continue
        match = _KEY.match(line)
        if match is None:
            key = None  # a nested or malformed line: not a key this reader knows
            continue
        key, raw = match.group(1), match.group(2)
        meta[key] = [] if raw == "" else _value(raw)
    body = "\n".join(text.split("\n")[end + 1 :])
    return meta, body


def text_value(meta: dict[str, FrontValue], key: str) -> str | None:
    """``key`` as one string (a list's items joined with commas), None when absent or empty."""
    value = meta.get(key)
    if isinstance(value, list):
        value = ", ".join(value)
    return value.strip() or None if isinstance(value, str) else None


def flag_value(meta: dict[str, FrontValue], key: str) -> bool:
    """True when ``key`` says ``true`` (any case, quoted or not)."""
    return (text_value(meta, key) or "").lower() == "true"


def glob_list(meta: dict[str, FrontValue], key: str) -> list[str]:
    """The globs under ``key``: a list, or one string of comma-separated globs; a ``{a,b}``
    alternative is expanded (bounded), since the shared glob rules have none."""
    value = meta.get(key)
    raw = value if isinstance(value, list) else _split_commas(value or "")
    out: list[str] = []
    for glob in raw:
        out += _expanded(glob.strip())
    return [g for g in dict.fromkeys(out) if g]


def _split_commas(text: str) -> list[str]:
    # Commas inside braces belong to an alternative, not between globs.
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


MAX_EXPANSIONS = 32
"""Globs one ``{a,b}`` glob may expand to; more is refused as a glob no rule needs."""


def _expanded(glob: str) -> list[str]:
    results = [glob]
    # One alternative per pass; each pass removes a brace pair, so the passes end, and the
    # count bound stops a glob that multiplies.
    while True:
        grown: list[str] = []
        changed = False
        for item in results:
            match = re.search(r"\{([^{}]*)\}", item)
            if match is None:
                grown.append(item)
                continue
            changed = True
            for option in match.group(1).split(","):
                grown.append(item[: match.start()] + option + item[match.end() :])
        if len(grown) > MAX_EXPANSIONS:
            raise RuleProblem(f"glob {glob[:80]!r} expands to more than {MAX_EXPANSIONS} globs")
        results = grown
        if not changed:
            break
    return results
