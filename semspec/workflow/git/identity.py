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

from semspec.core.errors import GitError
from semspec.workflow.git.repository import open_repository

IDENTITY_LENGTH = 12


@functools.lru_cache(maxsize=256)
def repository_identity(repo_path: str, commit_id: str) -> str:
    """The first ``IDENTITY_LENGTH`` hex digits of the root commit reached from ``commit_id``
    by first parents; empty when it cannot be known.

    Following first parents keeps to the mainline, so merging an unrelated history in later
    does not change the identity, and it reads far fewer commits than a full walk. A shallow
    clone does not have its root, and an unreadable repository has none to give: both get "",
    and the monitor then compares bare paths as it would without identities. Cached per commit,
    since the walk is linear in the length of the history.
    """
    try:
        repo = open_repository(Path(repo_path))
        if repo.is_shallow:
            return ""
        walker = repo.walk(pygit2.Oid(hex=commit_id), pygit2.enums.SortMode.NONE)
        walker.simplify_first_parent()
        root = ""
        for commit in walker:
            root = str(commit.id)
    except (GitError, pygit2.GitError, KeyError, ValueError):
        return ""
    return root[:IDENTITY_LENGTH]
