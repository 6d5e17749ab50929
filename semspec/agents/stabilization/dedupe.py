"""Collapse lines a session has already seen, unchanged, into one marker (no summarization)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def line_hash(text: str) -> str:
    """A short stable hash of one line's text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Rendered:
    """Numbered output of a read after collapsing, and how many lines were new."""

    text: str
    new_lines: int
    collapsed_lines: int


def render_lines(lines: list[str], start: int, seen: dict[int, str], min_run: int) -> Rendered:
    """Number ``lines`` (1-based from ``start``), collapsing runs of seen lines, and mark them seen.

    A run of at least ``min_run`` lines whose number and text were already returned becomes a
    single ``[lines a-b unchanged …]`` marker, so re-reading a file does not refill the context.
    """
    out: list[str] = []
    new = collapsed = 0
    run: list[int] = []

    def flush() -> None:
        nonlocal collapsed
        if len(run) >= min_run:
            out.append(
                f"     …| [lines {run[0]}-{run[-1]} unchanged, already shown in this session]"
            )
            collapsed += len(run)
        else:
            out.extend(f"{n:>6}| {lines[n - start]}" for n in run)
        run.clear()

    for offset, text in enumerate(lines):
        number = start + offset
        digest = line_hash(text)
        if seen.get(number) == digest:
            run.append(number)
            continue
        flush()
        out.append(f"{number:>6}| {text}")
        seen[number] = digest
        new += 1
    flush()
    return Rendered("\n".join(out), new, collapsed)
