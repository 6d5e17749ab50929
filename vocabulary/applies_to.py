"""What ``applies_to`` means: a glob matched with fnmatch (case-sensitive) against a
repo-relative path and against its basename, so ``*.py`` and ``src/*.py`` both work."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from posixpath import basename


def glob_matches(glob: str, path: str) -> bool:
    """True when ``glob`` matches the repo-relative ``path`` or its basename."""
    return fnmatchcase(path, glob) or fnmatchcase(basename(path), glob)


def any_matches(globs: Iterable[str], paths: Iterable[str]) -> bool:
    """True when some glob matches some path."""
    path_list = list(paths)
    return any(glob_matches(g, p) for g in globs for p in path_list)
