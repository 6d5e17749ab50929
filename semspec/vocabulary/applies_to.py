"""What ``applies_to`` means: gitignore-style globs (``pathspec``'s ``gitignore`` patterns)
matched case-sensitively against repo-relative ``/``-separated paths. ``docs/sops.md`` has the
rules and a table of examples that the tests check.

In short: ``*`` and ``?`` stay inside one folder; ``**/`` is zero or more folders; a pattern with
no slash but a trailing one matches at any depth (``*.py`` matches ``a/b.py``), one with a
slash is anchored at the repository root (``src/*.py`` does not match ``lib/src/a.py``); a
pattern that names a folder covers everything under it. ``!`` (negation) and ``#`` (comment)
have no meaning in a single glob, so such a glob (or an invalid one) matches nothing; the SOP
parser refuses them with ``glob_problem``.

Globs come from hostile places too (a reviewer's ``noted_patterns``), so matching must stay
cheap whatever the glob: ``pathspec`` compiles a glob to a backtracking regex whose cost grows
as the name length to the power of the number of ``*`` (``*a*a*a*a*a*a*a*a*b`` against a
40-character name held the GIL for seconds). So globs are read here the way ``pathspec``
reads them (a test checks the two agree) but matched one path segment at a time, each segment
with the two-pointer wildcard algorithm: the work is at most the glob's length times the
path's, never exponential. Unlike ``pathspec``'s regex, a negated set (``[!a]``) never matches
a ``/``, as the docs promise. A glob longer than ``MAX_GLOB_CHARS`` is refused and a path
longer than ``MAX_PATH_CHARS`` matches nothing, which keeps that product small; no real glob
or path comes near either limit.

The literal prefix of a glob and the lookup keys of a path make a pre-filter that an index can
answer exactly: a glob can only match a path when its ``literal_prefix`` is a prefix of one of
the path's ``lookup_keys``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pathspec.util import normalize_file

_WILDCARDS = "*?[\\"
SPECIAL_STARTS = ("!", "#")
"""First characters gitignore gives another meaning (negation, comment)."""
MAX_GLOB_CHARS = 256
"""Longest glob accepted; real ones are a few dozen characters."""
MAX_PATH_CHARS = 4096
"""Longest path a glob can match: Linux's ``PATH_MAX``, so no real file is longer."""

_STAR = object()
"""A ``*`` inside a segment; the other tokens match one character each."""
_Token = str | re.Pattern[str] | None | object
"""A literal character, a bracket expression, ``None`` for ``?``, or ``_STAR``."""


@dataclass(frozen=True)
class _Glob:
    """A valid glob split into segments the way ``pathspec``'s gitignore patterns split it:
    ``**`` segments and token lists; ``everything`` stands for the globs ``pathspec``
    special-cases (``**``, ``*``: any path; ``**/``, ``*/``: any path below the root)."""

    segments: tuple[tuple[_Token, ...] | None, ...]
    everything: str | None


def _tokens(segment: str) -> tuple[_Token, ...]:
    # The same reading as pathspec's segment translation: escapes, ``*``, ``?``, bracket
    # expressions (``!`` or ``^`` negates, a leading ``]`` is a member), else an unclosed ``[``
    # is a literal.
    out: list[_Token] = []
    i, end = 0, len(segment)
    while i < end:
        char = segment[i]
        i += 1
        if char == "\\":
            if i == end:
                raise ValueError(f"nothing follows the '\\' that ends {segment!r}")
            out.append(segment[i])
            i += 1
        elif char == "*":
            out.append(_STAR)
        elif char == "?":
            out.append(None)
        elif char == "[":
            j = i + 1 if i < end and segment[i] in "!^" else i
            j = j + 1 if j < end and segment[j] == "]" else j
            close = segment.find("]", j)
            if close < 0:
                out.append("[")
                continue
            negate = segment[i] in "!^"
            # Backslashes and "[" are members of the set, never regex syntax.
            body = segment[i + 1 if negate else i : close]
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(re.compile(f"[{'^' if negate else ''}{body}]"))
            i = close + 1
        else:
            out.append(char)
    return tuple(out)


def _one(token: _Token, char: str) -> bool:
    if token is None:
        return True
    if isinstance(token, re.Pattern):
        return token.fullmatch(char) is not None
    return token == char


def _name_matches(tokens: tuple[_Token, ...], name: str) -> bool:
    # Two pointers with one remembered star: on a mismatch, the last star swallows one more
    # character and matching resumes after it. Each step moves forward, so the cost is at most
    # len(tokens) * len(name), however many stars there are.
    t = n = 0
    star, star_n = -1, 0
    while n < len(name):
        if t < len(tokens) and tokens[t] is _STAR:
            star, star_n = t, n
            t += 1
        elif t < len(tokens) and _one(tokens[t], name[n]):
            t += 1
            n += 1
        elif star >= 0:
            star_n += 1
            t, n = star + 1, star_n
        else:
            return False
    return all(token is _STAR for token in tokens[t:])


def _normalized(glob: str) -> list[str]:
    # pathspec's normalization: a leading slash anchors; a glob of one segment (with or without
    # a trailing slash) gets a leading ``**``; a trailing slash becomes a last ``**``; repeated
    # ``**`` collapse into one.
    text = glob if glob.endswith("\\ ") else glob.rstrip()
    segments = text.split("/")
    if not segments[0]:
        del segments[0]
    elif (len(segments) == 1 or (len(segments) == 2 and not segments[1])) and segments[0] != "**":
        segments.insert(0, "**")
    if segments and not segments[-1]:
        segments[-1] = "**"
    return [s for i, s in enumerate(segments) if not (s == "**" and i and segments[i - 1] == "**")]


def _parsed(glob: str) -> _Glob:
    # Raises ValueError or re.error for a glob that is not valid.
    segments = _normalized(glob)
    # pathspec reads a lone "/" as "**", not as "**/".
    below_root = glob.rstrip().endswith("/") and glob.rstrip() != "/"
    if segments in (["**"], ["**", "*"]):
        return _Glob((), "below root" if segments == ["**"] and below_root else "any")
    if segments == ["**", "*", "**"]:
        return _Glob((), "below root")
    parsed = tuple(None if s == "**" else (_STAR,) if s == "*" else _tokens(s) for s in segments)
    return _Glob(parsed, None)


def _whole_name(tokens: tuple[_Token, ...], name: str) -> bool:
    # A segment that is just ``*`` needs a non-empty name (pathspec: ``[^/]+``).
    return bool(name) if tokens == (_STAR,) else _name_matches(tokens, name)


def _path_matches(glob: _Glob, path: str) -> bool:
    if glob.everything is not None:
        return "/" in path if glob.everything == "below root" else bool(path)
    names = path.split("/")
    last = len(glob.segments) - 1
    starts = {0}
    for i, tokens in enumerate(glob.segments):
        if tokens is None:
            if i == last:
                # A last ``**``: something must follow the folders matched so far.
                return any(j < len(names) for j in starts)
            starts = set(range(min(starts), len(names)))
            continue
        hits = {j for j in starts if j < len(names) and _whole_name(tokens, names[j])}
        if i == last:
            if tokens == (_STAR,):
                # A last ``*`` names the path itself (or its folder form ``dir/``), not a
                # folder above it.
                return any(
                    j == len(names) - 1 or (j, names[-1]) == (len(names) - 2, "") for j in hits
                )
            # Any other last segment also covers everything under a folder it names.
            return bool(hits)
        starts = {j + 1 for j in hits}
        if not starts:
            return False
    return False


def glob_problem(glob: str) -> str | None:
    """Why ``glob`` cannot be an ``applies_to`` pattern, or None when it can."""
    if not glob.strip():
        return "an empty glob matches nothing"
    if len(glob) > MAX_GLOB_CHARS:
        return f"a glob of {len(glob)} characters is longer than the {MAX_GLOB_CHARS} allowed"
    if glob.startswith(SPECIAL_STARTS):
        return f"{glob!r} starts with {glob[0]!r}, which gitignore reads as negation or comment"
    if any(part in (".", "..") for part in glob.split("/")):
        return f"{glob!r} has a '.' or '..' folder; write paths from the repository root"
    try:
        _parsed(glob)
    except (ValueError, re.error) as exc:
        return f"{glob!r} is not a valid glob ({exc})"
    return None


@lru_cache(maxsize=4096)
def _compiled(glob: str) -> _Glob | None:
    return None if glob_problem(glob) is not None else _parsed(glob)


def glob_matches(glob: str, path: str) -> bool:
    """True when the gitignore-style ``glob`` matches the repo-relative ``path``."""
    compiled = _compiled(glob)
    if compiled is None or len(path) > MAX_PATH_CHARS:
        return False
    return _path_matches(compiled, normalize_file(path))


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
