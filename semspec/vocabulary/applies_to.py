"""What ``applies_to`` means: gitignore-style globs (``pathspec``'s ``gitignore`` patterns)
matched case-sensitively against repo-relative ``/``-separated paths. ``docs/sops.md`` has the
rules and a table of examples that the tests check.

In short: ``*`` and ``?`` stay inside one folder; ``**/`` is zero or more folders; a pattern with
no slash but a trailing one matches at any depth (``*.py`` matches ``a/b.py``), one with a
slash is anchored at the repository root (``src/*.py`` does not match ``lib/src/a.py``); a
pattern that names a folder covers everything under it. ``!`` (negation) and ``#`` (comment)
have no meaning in a single glob, so such a glob (or an invalid one) matches nothing; the SOP
parser refuses them with ``glob_problem``.

The literal prefix of a glob and the lookup keys of a path make a pre-filter that an index can
answer exactly: a glob can only match a path when its ``literal_prefix`` is a prefix of one of
the path's ``lookup_keys``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from pathspec import PathSpec, Pattern

_WILDCARDS = "*?[\\"
SPECIAL_STARTS = ("!", "#")
"""First characters gitignore gives another meaning (negation, comment)."""


@lru_cache(maxsize=4096)
def _spec(glob: str) -> PathSpec[Pattern] | None:
    if glob_problem(glob) is not None:
        return None
    return PathSpec.from_lines("gitignore", [glob])


def glob_problem(glob: str) -> str | None:
    """Why ``glob`` cannot be an ``applies_to`` pattern, or None when it can."""
    if not glob.strip():
        return "an empty glob matches nothing"
    if glob.startswith(SPECIAL_STARTS):
        return f"{glob!r} starts with {glob[0]!r}, which gitignore reads as negation or comment"
    if any(part in (".", "..") for part in glob.split("/")):
        return f"{glob!r} has a '.' or '..' folder; write paths from the repository root"
    try:
        PathSpec.from_lines("gitignore", [glob])
    except ValueError as exc:
        return f"{glob!r} is not a valid glob ({exc})"
    return None


def glob_matches(glob: str, path: str) -> bool:
    """True when the gitignore-style ``glob`` matches the repo-relative ``path``."""
    spec = _spec(glob)
    return spec is not None and spec.match_file(path)


def any_matches(globs: Iterable[str], paths: Iterable[str]) -> bool:
    """True when some glob matches some path."""
    path_list = list(paths)
    return any(glob_matches(g, p) for g in globs for p in path_list)


def anchored(glob: str) -> bool:
    """True when ``glob`` is matched from the repository root (a slash before its end)."""
    return "/" in glob.rstrip("/")


def literal_prefix(glob: str) -> str:
    """The text every path (or folder name, for a glob that is not anchored) that ``glob``
    matches starts with: the glob up to its first wildcard or escape, without a leading slash
    and, when not anchored, without a trailing one ('' when it starts with a wildcard)."""
    text = glob.removeprefix("/") if anchored(glob) else glob.rstrip("/")
    cut = min((text.index(c) for c in _WILDCARDS if c in text), default=len(text))
    return text[:cut]


def lookup_keys(path: str) -> set[str]:
    """The path and each of its folder and file names: an anchored glob's prefix starts the
    path, an unanchored glob's prefix starts one of the names."""
    return {path, *(name for name in path.split("/") if name)}
