"""Plain text search over a worktree: case-insensitive literal or regular expression."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from semspec.agents.stabilization.layer import SearchHit
from semspec.agents.tools.files import open_regular
from semspec.agents.workspace import ToolError, Workspace

MAX_FILE_BYTES = 1_000_000
PREVIEW_CHARS = 200


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def search_files(
    workspace: Workspace,
    query: str,
    *,
    under: str | None = None,
    regex: bool = False,
    excluded_dirs: tuple[str, ...] = (),
    max_hits: int = 50,
    cancelled: Callable[[], bool] = lambda: False,
) -> list[SearchHit]:
    """Lines matching ``query`` in text files under ``under`` (default: the whole worktree).

    A search can take long (a large tree, a costly regular expression) and runs in a thread
    that cannot be killed: it stops with a ``ToolError`` once ``cancelled()`` says so.
    """
    if not query.strip():
        raise ToolError("query is empty; give a symbol, word or phrase to look for")
    try:
        pattern = re.compile(query if regex else re.escape(query), re.IGNORECASE)
    except re.error as exc:
        raise ToolError(f"query is not a valid regular expression: {exc}") from exc
    base = workspace.resolve(under) if under else workspace.root
    skip = {".git", *excluded_dirs}
    hits: list[SearchHit] = []
    for dirpath, dirnames, filenames in os.walk(base):
        # Sorted walk so the same tree always gives the same hits (stable candidate ids).
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            if name == ".git":
                continue  # a worktree's link to its repository, not part of the project
            path = Path(dirpath) / name
            if path.is_symlink() or not workspace.contains(Path(os.path.realpath(path))):
                continue
            rel = workspace.relative(path)
            try:
                with open_regular(path, rel) as (handle, size):
                    if size > MAX_FILE_BYTES:
                        continue
                    data = handle.read()
            except (OSError, ToolError):
                continue  # unreadable, or not a regular file (a FIFO would never answer)
            if _is_binary(data[:8192]):
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if cancelled():
                    raise ToolError("search stopped: the step was cancelled")
                if pattern.search(line):
                    hits.append(SearchHit(rel, number, line.strip()[:PREVIEW_CHARS]))
                    if len(hits) >= max_hits:
                        return hits
    return hits
