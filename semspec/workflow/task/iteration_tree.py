"""The worktree's state after a developer turn, kept as a git tree for the console's diff of
each iteration (issue 30 item 6).

The loop keeps no copy of the worktree between iterations, and hashing the patch (``diff_hash``)
says only whether two attempts differ. ``snapshot_tree`` writes the state as a checkpoint does
(ADR 0002: the base tree rebuilt along the changed paths, no index touched, no branch moved),
so an iteration costs a few loose objects, and the developer's log entry names the tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pygit2
import structlog

from semspec.core.errors import GitError
from semspec.workflow.git.snapshot import snapshot_tree

logger = structlog.get_logger()


def iteration_tree(worktree: str, base_commit: str, changed: Sequence[str]) -> str:
    """The id of the tree the worktree holds now; empty when it cannot be written, since a
    missing diff on a page is no reason to fail the developer's turn."""
    try:
        return snapshot_tree(Path(worktree), base_commit, changed)
    except (GitError, pygit2.GitError, OSError) as exc:
        logger.warning("iteration_tree_not_written", worktree=worktree, error=str(exc))
        return ""
