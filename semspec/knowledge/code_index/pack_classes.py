"""A class whose members are all one run of small definitions is one claim with them.

In stubs and in classes of one-line methods (cryptography's ``aead.pyi``: six classes of six
signatures each) a class line and the one line of its members each cost a span and a line of
their own; written ``9+29 class AESGCM: __init__(key); encrypt(...)``, the class's span holds
every member the claim names, so the evidence is as exact and one claim's overhead is saved.
"""

from __future__ import annotations


def fold_class_runs(
    body: list[str], runs: frozenset[str] | set[str] = frozenset()
) -> tuple[list[str], int]:
    """``body`` with each class line followed by a single member line that is a run (labels
    joined by ``; ``, or in ``runs``: the dictionary ids of runs and the text of a stub's run
    of one return type) and lies inside the class's span
    merged into one; and how many claims that removed."""
    folded: list[str] = []
    merged = 0
    index = 0
    while index < len(body):
        line = body[index]
        follower = body[index + 1] if index + 1 < len(body) else ""
        after = body[index + 2] if index + 2 < len(body) else ""
        if _foldable(line, follower, after, runs):
            folded.append(f"{line}: {follower.lstrip(' ').partition(' ')[2]}")
            merged += 1
            index += 2
            continue
        folded.append(line)
        index += 1
    return folded, merged


def _foldable(line: str, follower: str, after: str, runs: frozenset[str] | set[str]) -> bool:
    level = _level(line)
    span, _, text = line[level:].partition(" ")
    if not text.startswith("class ") or not span[:1].isdigit() or not follower:
        return False
    if _level(follower) != level + 1 or (after and _level(after) > level):
        return False  # the class has more than one member line
    member_span, _, member = follower[level + 1 :].partition(" ")
    if not member_span[:1].isdigit() or ("; " not in member and member not in runs):
        return False
    start, end = _bounds(span)
    member_start, member_end = _bounds(member_span)
    return start <= member_start and member_end <= end


def _level(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _bounds(span: str) -> tuple[int, int]:
    start, _, more = span.partition("+")
    return int(start), int(start) + int(more or 0)
