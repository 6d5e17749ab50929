"""Task ids, the branch names derived from them, and the name semspec commits under."""

from __future__ import annotations

import re

from semspec.core.errors import InputError

TASK_BRANCH_PREFIX = "semspec/task/"
SEMSPEC_AUTHOR = ("semspec", "semspec@localhost")
"""Name and email of the commits semspec itself writes (task commits, snapshots, merges)."""
_TASK_ID = re.compile(r"[A-Za-z0-9._-]+")


def validate_task_id(task_id: str) -> str:
    """Return ``task_id`` if it is safe as a ref name and a path component, else InputError."""
    if (
        not _TASK_ID.fullmatch(task_id)
        or ".." in task_id
        or task_id.startswith((".", "-"))
        or task_id.endswith((".", ".lock"))
    ):
        raise InputError(
            f"task id {task_id!r} cannot name a branch and a directory",
            hint="use letters, digits, '.', '_' and '-' only, not starting with '.' or '-' "
            "and without '..'",
        )
    return task_id


def task_branch(task_id: str) -> str:
    """The branch a task's work lives on, e.g. ``semspec/task/t-42``."""
    return TASK_BRANCH_PREFIX + validate_task_id(task_id)
