"""Which of a gate's items are new in the change and which were already on the base commit.

A pure function of two item lists (``split_new``), so it is tested without running a tool.
Lint findings match by file, rule and message, not by line: an edit above a finding moves it
without making it new. When a file has several findings of the same rule and message, each
base finding takes the nearest one by line, and what is left over is new. Messages are
compared with their numbers blanked (mypy says "defined on line 12"). A file the change moved
is compared under its name on the base (``renames``). Failing tests match by test id.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from semspec.workflow.gates.types import GateItem

MAX_ITEMS = 20
"""Items a gate result keeps; the rest is a count (``GateResult.items_more``)."""
MAX_KNOWN_EXAMPLES = 5
"""Items already on the base kept as examples of what was set aside."""

_NUMBERS = re.compile(r"\d+")


@dataclass(frozen=True)
class Split:
    """A gate's items split by whether the base commit had them too."""

    new: list[GateItem]
    known: list[GateItem]


def item_key(item: GateItem, renames: Mapping[str, str]) -> tuple[str, ...]:
    """What stays the same for one finding across edits: a test's id, else file (under its
    base name), rule and message with numbers blanked."""
    if item.test:
        return ("test", item.test)
    path = renames.get(item.path, item.path)
    return ("lint", path, item.rule, _NUMBERS.sub("#", item.message))


def split_new(
    current: list[GateItem], base: list[GateItem], renames: Mapping[str, str] | None = None
) -> Split:
    """``current``'s items that the base does not account for (new), and those it does."""
    moved = renames or {}
    on_base: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for item in base:
        on_base[item_key(item, {})].append(item.line)
    by_key: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, item in enumerate(current):
        by_key[item_key(item, moved)].append(index)
    known_at: set[int] = set()
    for key, indexes in by_key.items():
        known_at.update(_matched(indexes, current, on_base.get(key, [])))
    new = [item for index, item in enumerate(current) if index not in known_at]
    known = [item for index, item in enumerate(current) if index in known_at]
    return Split(new=new, known=known)


def _matched(indexes: list[int], current: list[GateItem], base_lines: list[int]) -> set[int]:
    """Indexes of ``current`` (all of one key) that a base finding takes, nearest line first."""
    if len(base_lines) >= len(indexes):
        return set(indexes)
    pairs = sorted(
        (abs(current[i].line - line), n, i) for n, line in enumerate(base_lines) for i in indexes
    )
    taken: set[int] = set()
    used: set[int] = set()
    for _, n, i in pairs:
        if n not in used and i not in taken:
            used.add(n)
            taken.add(i)
    return taken
