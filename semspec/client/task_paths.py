"""Check one task file as the user named it: an existing file, or one the task will create.

A task names the files it works on, and a new module or test file is as much part of it as an
existing one, so a path that does not exist yet is accepted. What can never be a task file is
refused with the path named: absolute paths, paths that leave the repository (``..`` or a
symlink pointing out), paths inside ``.git`` or semspec's own run directory, folders, and
anything that exists but is not a regular file.
"""

from __future__ import annotations

from pathlib import Path

from semspec.core.errors import TaskSpecError
from semspec.core.path_refusal import os_refusal

FIELD = "--file"
HINT = (
    "task files are paths relative to the repository root; a path that does not exist yet "
    "is a file the task will create"
)


def _refuse(message: str, hint: str = HINT) -> TaskSpecError:
    return TaskSpecError(message, field=FIELD, hint=hint)


def task_path(given: str, repo: Path, run_dir: Path) -> str:
    """The repo-relative ``/`` form of the task file ``given``, or a ``TaskSpecError``.

    Symlinks in the existing part of the path are followed before the checks, so a link that
    points out of the repository (or into ``.git``) is judged by where it leads.
    """
    if not given.strip():
        raise _refuse("an empty path is not a task file")
    if Path(given).is_absolute():
        raise _refuse(f"{given} is an absolute path", "write it relative to the repository root")
    root = repo.resolve()
    refusal = os_refusal(root / given)
    if refusal is not None:
        raise _refuse(f"{given}: {refusal}")
    target = (root / given).resolve()
    if target == root:
        raise _refuse(f"{given} names the repository itself, not a file")
    if root not in target.parents:
        raise _refuse(f"{given} is outside the repository {repo}")
    rel = target.relative_to(root)
    if ".git" in rel.parts:
        raise _refuse(f"{given} is inside .git", "task files are files of the project")
    run = run_dir.resolve()
    if target == run or run in target.parents:
        raise _refuse(
            f"{given} is inside semspec's run directory {run_dir}",
            "task files are files of the project",
        )
    if given.endswith("/") or target.is_dir():
        raise _refuse(f"{given} is a directory", "name the files in it, one --file each")
    if target.exists() and not target.is_file():
        raise _refuse(f"{given} is not a regular file")
    for parent in target.parents:
        if parent == root:
            break
        if parent.exists() and not parent.is_dir():
            blocker = parent.relative_to(root).as_posix()
            raise _refuse(f"{given} cannot be created: {blocker} is a file")
    return rel.as_posix()
