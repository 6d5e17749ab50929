"""Pointers: large payloads kept aside, replaced by a summary that says how to get them back."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from semspec.agents.compaction.summarize import Kind, summarize

REHYDRATE_LINES = 200
REHYDRATE_CHARS = 12_000


@dataclass(frozen=True)
class Pointer:
    """A stored payload and its summary."""

    pointer_id: str
    kind: Kind
    source: str
    lines: int
    chars: int
    summary: str


class PointerStore:
    """Payloads of one agent session by pointer id, in memory."""

    def __init__(self) -> None:
        self._payloads: dict[str, str] = {}
        self._pointers: dict[str, Pointer] = {}
        self.rehydrations = 0

    def __contains__(self, pointer_id: object) -> bool:
        return pointer_id in self._payloads

    def put(self, payload: str, *, source: str) -> Pointer:
        """Store ``payload`` and return its pointer (the id is a hash, so re-storing is free)."""
        digest = hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=6)
        pointer_id = f"ptr-{digest.hexdigest()}"
        existing = self._pointers.get(pointer_id)
        if existing is not None:
            return existing
        kind, body = summarize(payload)
        line_count = payload.count("\n") + (0 if payload.endswith("\n") or not payload else 1)
        header = (
            f"[pointer {pointer_id} · {kind} · {line_count} lines · {len(payload)} chars"
            f" · output of {source}, replaced to save context]"
        )
        how = (
            f'To see the original call rehydrate(pointer_id="{pointer_id}", start_line=1, '
            f"end_line={min(REHYDRATE_LINES, max(1, line_count))}); "
            f"up to {REHYDRATE_LINES} lines per call."
        )
        pointer = Pointer(
            pointer_id, kind, source, line_count, len(payload), "\n".join([header, *body, how])
        )
        self._payloads[pointer_id] = payload
        self._pointers[pointer_id] = pointer
        return pointer

    def rehydrate(
        self, pointer_id: str, start_line: int = 1, end_line: int | None = None, offset: int = 0
    ) -> dict[str, Any]:
        """Lines ``start_line..end_line`` of the original (at most 200 lines, 12,000 chars)."""
        payload = self._payloads.get(pointer_id)
        if payload is None:
            known = ", ".join(sorted(self._payloads)[:5]) or "none"
            return {
                "ok": False,
                "error": f"unknown pointer_id {pointer_id!r}; known pointers: {known}",
            }
        self.rehydrations += 1
        lines = payload.splitlines()
        start = max(1, start_line)
        end = min(len(lines), end_line or start + REHYDRATE_LINES - 1, start + REHYDRATE_LINES - 1)
        text = "\n".join(lines[start - 1 : end])
        piece = text[offset : offset + REHYDRATE_CHARS]
        result: dict[str, Any] = {
            "ok": True,
            "pointer_id": pointer_id,
            "start_line": start,
            "end_line": end,
            "total_lines": len(lines),
            "content": piece,
        }
        if offset + REHYDRATE_CHARS < len(text):
            result["next_call"] = {
                "tool": "rehydrate",
                "args": {
                    "pointer_id": pointer_id,
                    "start_line": start,
                    "end_line": end,
                    "offset": offset + REHYDRATE_CHARS,
                },
            }
        elif end < len(lines):
            result["next_call"] = {
                "tool": "rehydrate",
                "args": {
                    "pointer_id": pointer_id,
                    "start_line": end + 1,
                    "end_line": min(len(lines), end + REHYDRATE_LINES),
                },
            }
        return result
