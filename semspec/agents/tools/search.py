"""Plain text search over a worktree: case-insensitive literal or regular expression.

Patterns come from the model, so they are matched with the ``regex`` package rather than ``re``:
``re`` holds the GIL through a match, and one costly pattern (nested or overlapping repetition
that backtracks exponentially) would stall every task on the worker for as long as it runs, out
of reach of the call's deadline. ``regex`` matches with the GIL released (``concurrent``) and
gives up after ``MATCH_TIMEOUT_S`` on one line, which the model reads as "pattern too costly".
Compiling runs with the GIL held and ``regex`` copies counted repeats (``x{1000}``) out in full,
so a pattern's length and the size its counts give it are bounded before it is compiled.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import regex as re

from semspec.agents.stabilization.layer import SearchHit
from semspec.agents.tools.files import is_binary, read_regular
from semspec.agents.workspace import HIDDEN_NAMES, ToolError, Workspace

MAX_FILE_BYTES = 1_000_000
PREVIEW_CHARS = 200
MAX_QUERY_CHARS = 500
MATCH_TIMEOUT_S = 10.0
"""How long matching one line may take before the search ends as too costly."""
MAX_PATTERN_SIZE = 100_000
"""Bound on a regular expression's length times its repeat counts multiplied together."""
_VERBOSE = re.compile(r"\(\?[\w-]*x")
_COUNTED = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


def _never() -> bool:
    return False


def search_files(
    workspace: Workspace,
    query: str,
    *,
    under: str | None = None,
    regex: bool = False,
    excluded_dirs: tuple[str, ...] = (),
    max_hits: int = 50,
    cancelled: Callable[[], bool] = _never,
) -> list[SearchHit]:
    """Lines matching ``query`` in text files under ``under`` (default: the whole worktree).

    Only regular files up to ``MAX_FILE_BYTES`` are read: links, FIFOs, sockets and devices are
    skipped unopened, and so are ``.git`` and ``.semspec``. A search can take long (a large tree,
    a costly regular expression) and runs in a thread that cannot be killed: it stops with a
    ``ToolError`` once ``cancelled()`` says so.
    """
    pattern = _compile(query, regex)
    base = workspace.resolve(under) if under else workspace.root
    skip = {*HIDDEN_NAMES, *excluded_dirs}
    hits: list[SearchHit] = []
    # Links are not followed: a file reached through one lies outside the walked tree.
    for dirpath, dirnames, filenames in os.walk(base):
        # Sorted walk so the same tree always gives the same hits (stable candidate ids).
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            if cancelled():
                raise ToolError("search stopped: the step was cancelled or ran out of time")
            if name in HIDDEN_NAMES:
                continue  # a worktree's .git file, not part of the project
            path = Path(dirpath) / name
            rel = workspace.relative(path)
            try:
                data = read_regular(path, rel, MAX_FILE_BYTES)
            except ToolError:
                continue  # not a regular file, too large, or unreadable
            if is_binary(data):
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if cancelled():
                    raise ToolError("search stopped: the step was cancelled or ran out of time")
                if _matches(pattern, line, rel, number):
                    hits.append(SearchHit(rel, number, line.strip()[:PREVIEW_CHARS]))
                    if len(hits) >= max_hits:
                        return hits
    return hits


def _compile(query: str, regex: bool) -> re.Pattern[str]:
    """``query`` as a case-insensitive pattern; ``ToolError`` for one that is empty, invalid or
    too large to compile safely."""
    if not query.strip():
        raise ToolError("query is empty; give a symbol, word or phrase to look for")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(
            f"query is {len(query)} characters, more than {MAX_QUERY_CHARS}; "
            "search for a shorter, distinctive part"
        )
    if not regex:
        return re.compile(re.escape(query), re.IGNORECASE)
    if _VERBOSE.search(query):
        # Verbose mode lets spaces and comments split a count ({1 0 0 0}) past the size check.
        raise ToolError(
            "verbose mode (?x) is not supported in search; write the pattern without it"
        )
    if len(query) * _repeat_product(query) > MAX_PATTERN_SIZE:
        raise ToolError(
            "query is too large a regular expression once its counted repeats ({n}) are "
            "written out; use smaller counts or + and *"
        )
    try:
        return re.compile(query, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise ToolError(f"query is not a valid regular expression: {exc}") from exc


def _repeat_product(query: str) -> int:
    """The counts of ``query``'s counted repeats multiplied together (the larger bound of each),
    an upper bound of how many times a nested repeat is copied out, whatever the nesting."""
    product = 1
    for found in _COUNTED.finditer(query):
        bounds = [int(n) for n in found.groups() if n]
        product *= max([1, *bounds])
    return product


def _matches(pattern: re.Pattern[str], line: str, rel: str, number: int) -> bool:
    try:
        return pattern.search(line, concurrent=True, timeout=MATCH_TIMEOUT_S) is not None
    except TimeoutError:
        raise ToolError(
            f"pattern too costly: matching it against {rel}:{number} took over "
            f"{MATCH_TIMEOUT_S:g} s; use a literal query or a pattern without nested or "
            "overlapping repetition such as (a+)+ or (a|a)*"
        ) from None
