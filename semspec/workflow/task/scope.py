"""What counts as scope creep: a touched file that is neither a task file nor allowed extra.

A task's scope is the files it names (including files it will create) plus every path that a
``scope.allow`` glob matches (gitignore-style, see ``vocabulary/applies_to.py``); by default
those are the usual test locations, so a developer who adds or updates a test for the code it
changed has not left its task. The task loop computes the list once and sends it to the risk
monitor in the ``files`` event, so the monitor and the loop never disagree about it.
"""

from __future__ import annotations

from collections.abc import Iterable

from semspec.vocabulary.applies_to import glob_matches


def allowed_extra(path: str, allow: Iterable[str]) -> bool:
    """True when some ``allow`` glob matches the repo-relative ``path``."""
    return any(glob_matches(glob, path) for glob in allow)


def out_of_scope(
    touched: Iterable[str],
    task_files: Iterable[str],
    allow: Iterable[str],
    protected: Iterable[str] = (),
) -> list[str]:
    """Touched paths that are neither task files nor allowed extras, sorted.

    A task that names no files has no scope to creep out of, so nothing is outside it. A
    ``protected`` path (a rule file the reviewer judges by) is never an allowed extra: only
    naming it among the task's files lets a task change it.
    """
    scope = set(task_files)
    if not scope:
        return []
    globs = list(allow)
    guarded = set(protected)
    return sorted(
        {p for p in touched if p not in scope and (p in guarded or not allowed_extra(p, globs))}
    )
