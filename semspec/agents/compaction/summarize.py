"""Deterministic summaries of large tool outputs: counts, head and tail, diff and JSON shape.

No LLM is involved, so the same payload always gives the same summary (seed 002, 4.2).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

Kind = Literal["diff", "json", "text"]
HEAD_LINES = 6
TAIL_LINES = 3
LINE_CHARS = 160
MAX_FILES = 8
MAX_KEYS = 12
# Parsing megabytes of JSON costs more than the per-turn budget; larger payloads get the text form.
MAX_JSON_PARSE_BYTES = 1_000_000
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def detect_kind(payload: str) -> Kind:
    """``diff`` for unified diffs, ``json`` for JSON documents, ``text`` otherwise."""
    head = payload[:4096]
    if head.startswith(("diff --git", "--- ")) or (
        "\n@@ " in head and ("\n+++ " in head or head.startswith("+++ "))
    ):
        return "diff"
    if head.lstrip()[:1] in ("{", "["):
        return "json"
    return "text"


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"


def _head_tail(lines: list[str]) -> list[str]:
    out = ["head:"] + [f"  {_clip(line)}" for line in lines[:HEAD_LINES]]
    if len(lines) > HEAD_LINES + TAIL_LINES:
        out.append("tail:")
        out.extend(f"  {_clip(line)}" for line in lines[-TAIL_LINES:])
    return out


def diff_stats(lines: list[str]) -> list[str]:
    """Per-file hunk, insertion and deletion counts of a unified diff."""
    files: dict[str, list[int]] = {}
    current = "?"
    for line in lines:
        if line.startswith("+++ "):
            current = line[4:].strip().removeprefix("b/")
            files.setdefault(current, [0, 0, 0])
        elif line.startswith("--- ") or line.startswith("diff --git"):
            continue
        elif _HUNK.match(line):
            files.setdefault(current, [0, 0, 0])[0] += 1
        elif line.startswith("+"):
            files.setdefault(current, [0, 0, 0])[1] += 1
        elif line.startswith("-"):
            files.setdefault(current, [0, 0, 0])[2] += 1
    hunks = sum(v[0] for v in files.values())
    added = sum(v[1] for v in files.values())
    removed = sum(v[2] for v in files.values())
    out = [f"diff: {len(files)} files, {hunks} hunks, +{added} -{removed}"]
    for name, (h, a, r) in list(files.items())[:MAX_FILES]:
        out.append(f"  {_clip(name)}: {h} hunks, +{a} -{r}")
    if len(files) > MAX_FILES:
        out.append(f"  … and {len(files) - MAX_FILES} more files")
    return out


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"object({len(value)} keys)"
    if isinstance(value, list):
        return f"array({len(value)})"
    if isinstance(value, str):
        return f"string({len(value)})"
    return type(value).__name__ if value is not None else "null"


def json_shape(payload: str) -> list[str]:
    """The top level of a JSON document: keys with value types, or array length and item type."""
    if len(payload) > MAX_JSON_PARSE_BYTES:
        return ["json: too large to parse inline; use rehydrate to page through it"]
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        return [f"json: does not parse ({exc.msg} at line {exc.lineno})"]
    if isinstance(data, dict):
        out = [f"json: object with {len(data)} keys"]
        out.extend(f"  {_clip(str(k))}: {_describe(v)}" for k, v in list(data.items())[:MAX_KEYS])
        if len(data) > MAX_KEYS:
            out.append(f"  … and {len(data) - MAX_KEYS} more keys")
        return out
    if isinstance(data, list):
        first = _describe(data[0]) if data else "-"
        return [f"json: array of {len(data)} items, first item {first}"]
    return [f"json: {_describe(data)}"]


def summarize(payload: str, kind: Kind | None = None) -> tuple[Kind, list[str]]:
    """The kind of ``payload`` and summary lines describing it without its bulk."""
    kind = kind or detect_kind(payload)
    lines = payload.splitlines()
    body: list[str] = []
    if kind == "diff":
        body.extend(diff_stats(lines))
    elif kind == "json":
        body.extend(json_shape(payload))
    body.extend(_head_tail(lines))
    return kind, body
