"""Reading a meaning pack back: each claim's evidence pointer as ``path:start-end#hash8``."""

from __future__ import annotations


def _span(text: str) -> str:
    start, _, end = text.partition("-")
    return f"{start}-{end or start}"


def pack_evidence(text: str) -> dict[str, str]:
    """Map each claim id of a pack to its evidence pointer ``path:start-end#hash8``."""
    words: dict[str, str] = {}
    pointers: dict[str, str] = {}
    path = ""
    section: list[str] = []
    for raw in text.splitlines():
        parts = raw.strip().split(" ")
        kind = parts[0]
        if kind == "D" and len(parts) >= 3:
            words[parts[1]] = " ".join(parts[2:])
        elif kind == "F" and len(parts) >= 3:
            head, _, rest = parts[2].partition("/")
            path = f"{words[head]}/{rest}" if rest and head in words else parts[2]
            section = [parts[1]]
        elif kind in ("N", "E") and len(parts) >= 2:
            section.append(parts[1])
        elif kind == "EV" and len(parts) >= 2:
            digest = parts[1].lstrip("#")
            # Spans follow the section's claims in order.
            for claim, span in zip(section, parts[2:], strict=True):
                pointers[claim] = f"{path}:{_span(span)}#{digest}"
            section = []
    return pointers
