"""Reading a meaning pack back: each claim's evidence pointer as ``path:start-end#hash8``."""

from __future__ import annotations


def _span(text: str) -> str:
    """``12+3`` (a start and how many lines follow it) or ``12`` as ``12-15`` or ``12-12``."""
    start, _, more = text.partition("+")
    return f"{start}-{int(start) + int(more or 0)}"


def pack_evidence(text: str) -> dict[str, str]:
    """Map each claim of a pack to its evidence pointer ``path:start-end#hash8``.

    Claims are named ``n0``, ``n1``, … in the order they appear: a file line, then each line
    that opens with a line span.
    """
    words: dict[str, str] = {}
    pointers: dict[str, str] = {}
    path = digest = ""
    for raw in text.splitlines():
        parts = raw.strip().split(" ")
        kind = parts[0]
        if kind[:1] == "d" and kind[1:].isdigit() and len(parts) >= 2:
            words[kind] = " ".join(parts[1:])
        elif kind == "F" and len(parts) >= 5:
            # ``F path language NL #hash``: read from the right, a path may hold spaces.
            written, _language, lines, hashed = raw[2:].rsplit(" ", 3)
            head, _, rest = written.partition("/")
            path = f"{words[head]}/{rest}" if rest and head in words else written
            digest = hashed.lstrip("#")
            whole = max(int(lines.removesuffix("L")), 1)
            pointers[f"n{len(pointers)}"] = f"{path}:1-{whole}#{digest}"
        elif kind[:1].isdigit():
            pointers[f"n{len(pointers)}"] = f"{path}:{_span(kind)}#{digest}"
    return pointers
