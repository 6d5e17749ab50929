"""Which files of a repository get indexed: excluded folders, symlinks, binary and huge files.

Every path is resolved with ``realpath`` and refused when it leaves the repository; symlinks
are never followed (a link to a file inside the repository is indexed at its target's path).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from semspec.processors.code_index.languages import language_of

SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Skipped:
    """A path that was not indexed and why."""

    path: str
    reason: str


@dataclass
class WalkResult:
    """Source files to read (repo-relative, sorted) and the paths passed over."""

    files: list[str]
    skipped: list[Skipped]


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root + os.sep)


def _relative(root: str, path: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def _link_reason(root: str, path: str) -> str:
    target = os.path.realpath(path)
    if not _inside(root, target):
        return f"refused: symlink leaves the repository (to {target})"
    if not os.path.exists(target):
        return "broken symlink"
    return f"symlink not followed (target {_relative(root, target)})"


def walk_repository(repo: Path, exclude_dirs: frozenset[str]) -> WalkResult:
    """Source files under ``repo`` with a known language, plus everything skipped with a reason."""
    root = os.path.realpath(repo)
    files: list[str] = []
    skipped: list[Skipped] = []
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        kept: list[str] = []
        for name in sorted(dirnames):
            full = os.path.join(current, name)
            if os.path.islink(full):
                skipped.append(Skipped(_relative(root, full), _link_reason(root, full)))
            elif name in exclude_dirs:
                skipped.append(Skipped(_relative(root, full), "excluded directory"))
            else:
                kept.append(name)
        dirnames[:] = kept  # os.walk descends only into what is left here
        for name in sorted(filenames):
            full = os.path.join(current, name)
            rel = _relative(root, full)
            if os.path.islink(full):
                skipped.append(Skipped(rel, _link_reason(root, full)))
            elif not _inside(root, os.path.realpath(full)):
                skipped.append(Skipped(rel, "refused: path leaves the repository"))
            elif language_of(rel) is None:
                skipped.append(Skipped(rel, "not a source file"))
            else:
                files.append(rel)
    return WalkResult(sorted(files), sorted(skipped, key=lambda s: s.path))


class NotIndexable(Exception):
    """A file the walk listed that turns out not to be indexable (binary, huge, moved away)."""


def read_source(repo: Path, rel: str, max_bytes: int) -> bytes:
    """The bytes of ``rel`` under ``repo``; raises ``NotIndexable`` with the reason to report."""
    root = os.path.realpath(repo)
    full = os.path.join(root, rel)
    # Checked again at read time: the tree may have changed since the walk.
    if os.path.islink(full) or not _inside(root, os.path.realpath(full)):
        raise NotIndexable("refused: path leaves the repository")
    try:
        size = os.stat(full).st_size
        if size > max_bytes:
            raise NotIndexable(f"too large ({size} bytes > {max_bytes})")
        with open(full, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise NotIndexable(f"unreadable: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise NotIndexable(f"too large (> {max_bytes} bytes)")
    if b"\0" in data[:SNIFF_BYTES]:
        raise NotIndexable("binary (NUL byte)")
    return data
