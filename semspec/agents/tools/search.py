"""Plain text search over a worktree: case-insensitive literal or regular expression."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from semspec.agents.stabilization.layer import SearchHit
from semspec.agents.tools.files import is_binary, read_regular
from semspec.agents.workspace import HIDDEN_NAMES, ToolError, Workspace

MAX_FILE_BYTES = 1_000_000
PREVIEW_CHARS = 200


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
    if not query.strip():
        raise ToolError("query is empty; give a symbol, word or phrase to look for")
    try:
        pattern = re.compile(query if regex else re.escape(query), re.IGNORECASE)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ToolError(f"query is not a valid regular expression: {exc}") from exc
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
                if pattern.search(line):
                    hits.append(SearchHit(rel, number, line.strip()[:PREVIEW_CHARS]))
                    if len(hits) >= max_hits:
                        return hits
    return hits
