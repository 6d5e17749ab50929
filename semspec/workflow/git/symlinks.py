"""Symlinks in a worktree whose target lies outside it (the risk monitor flags them)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def escaping_symlinks(worktree: Path, paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` (relative to ``worktree``) that are symlinks resolving outside it.

    The target is resolved as the operating system would follow it (chains of links included);
    a dangling link counts by where it points. Paths that are not symlinks are skipped.
    """
    root = Path(os.path.realpath(worktree))
    found = []
    for path in paths:
        link = worktree / path
        if not link.is_symlink():
            continue
        target = Path(os.path.realpath(link))
        if not target.is_relative_to(root):
            found.append(path)
    return sorted(found)
