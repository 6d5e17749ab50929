"""A repository's identity: the root commit of its history, the same in every clone.

The risk monitor compares files touched by tasks; two tasks conflict only when they change the
same path of the same project. A path alone would make tasks in unrelated repositories sharing
one stack look like rivals, and an absolute checkout path would hide real conflicts between
two clones of one project. The root commit tells both cases apart.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pygit2

from workflow.git.repository import open_repository

IDENTITY_LENGTH = 12


@functools.lru_cache(maxsize=256)
def repository_identity(repo_path: str, commit_id: str) -> str:
    """The first ``IDENTITY_LENGTH`` hex digits of the root commit reached from ``commit_id``.

    With several roots (histories merged together) the smallest id is taken, so every clone
    agrees. Cached per commit: the walk reads the whole history once per process.
    """
    repo = open_repository(Path(repo_path))
    walker = repo.walk(pygit2.Oid(hex=commit_id), pygit2.enums.SortMode.NONE)
    roots = [str(commit.id) for commit in walker if not commit.parent_ids]
    return min(roots)[:IDENTITY_LENGTH]
