"""Where a learned convention applies: the glob the files of its approvals share (issue 29,
item 7).

A reviewer who approves a change may note a convention in it (``noted_patterns``). The files
it was seen in are evidence for a folder, not a list of files to remember: a convention seen in
``src/api/users.py`` and ``src/api/v2/orders.py`` is about ``src/api/**/*.py``. So the scope is
the deepest folder the evidence shares and, when they share one, its files' extension. The
reviewer's own ``applies_to`` only picks which of the change's files are the evidence; it never
widens the scope past the folder the change touched (a reviewer writing ``*`` cannot make a
convention learned in ``src/api`` apply to the whole repository).

Pure functions of paths, so the knowledge page, the reviewer's context and the tests agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from semspec.vocabulary.applies_to import MAX_GLOB_CHARS, glob_matches, glob_problem

_SPECIAL = "*?[]\\"
"""Characters a folder or extension must have escaped to stand for themselves in a glob."""
MAX_EVIDENCE_FILES = 100
"""Files one approval keeps as evidence; a larger change keeps a sample with the same glob."""
_EVERYTHING = frozenset({"*", "**", "**/*", "/**"})
"""Reviewer globs that name no files in particular (the default ``*``)."""


def _clean(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _escaped(text: str) -> str:
    out = "".join(f"\\{c}" if c in _SPECIAL else c for c in text)
    # A leading ``!`` or ``#`` would negate or comment the glob; a trailing space is dropped.
    if out[:1] in ("!", "#"):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out


def _common_folder(files: Sequence[str]) -> list[str]:
    folders = [PurePosixPath(f).parts[:-1] for f in files]
    shared: list[str] = []
    for column in zip(*folders, strict=False):
        if any(name != column[0] for name in column):
            break
        shared.append(column[0])
    return shared


def _common_suffix(files: Sequence[str]) -> str:
    suffixes = {PurePosixPath(f).suffix for f in files}
    return suffixes.pop() if len(suffixes) == 1 else ""


def shared_glob(files: Iterable[str]) -> str:
    """The glob the ``files`` share: ``FOLDER/**/*.EXT`` (``src/api/**/*.py``), without the
    folder when they share none (``**/*.py``), without the extension when they differ
    (``src/api/**``); ``""`` for no files."""
    paths = sorted({c for c in (_clean(f) for f in files) if c})
    if not paths:
        return ""
    suffix = _common_suffix(paths)
    tail = f"*{_escaped(suffix)}" if suffix else ""
    folder = _common_folder(paths)
    # A folder too deep for a glob's length limit gives way to its parent: broader, still true.
    while True:
        head = "/".join(_escaped(p) for p in folder)
        glob = "/".join(p for p in (head, "**", tail) if p)
        if (len(glob) <= MAX_GLOB_CHARS and glob_problem(glob) is None) or not folder:
            return glob
        folder = folder[:-1]


def evidence_files(noted: Sequence[str], files: Iterable[str]) -> list[str]:
    """The files of an approved change that a noted convention was seen in: those its globs
    ``noted`` match, or every file when they name none in particular or match none."""
    changed = sorted({c for c in (_clean(f) for f in files) if c})
    specific = [g for g in noted if g.strip() not in _EVERYTHING]
    if not specific:
        return changed
    matched = [f for f in changed if any(glob_matches(g, f) for g in specific)]
    return matched or changed


def evidence_sample(files: Sequence[str], most: int = MAX_EVIDENCE_FILES) -> list[str]:
    """At most ``most`` of ``files`` (at least 3) that share the same glob as all of them: the
    first and last by folder (every shared folder is shared by those two) and, when the
    extensions differ, a file whose extension differs from the first's."""
    paths = sorted(set(files), key=lambda f: PurePosixPath(f).parts)
    if len(paths) <= most:
        return paths
    keep = {paths[0], paths[-1]}
    first = PurePosixPath(paths[0]).suffix
    keep.update(next(([f] for f in paths if PurePosixPath(f).suffix != first), []))
    for path in paths:
        if len(keep) >= max(most, 3):
            break
        keep.add(path)
    return sorted(keep)
