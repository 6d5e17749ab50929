"""Which files of a repository get indexed: excluded folders, symlinks, binary and huge files.

Every path is resolved with ``realpath`` and refused when it leaves the repository; symlinks
are never followed (a link to a file inside the repository is indexed at its target's path).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from semspec.knowledge.code_index.languages import language_of

SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Skipped:
    """A path that was not indexed and why."""

    path: str
    reason: str


@dataclass
class WalkResult:
    """Source files to read (repo-relative, sorted) with their ``lstat``, and the paths passed
    over."""

    files: list[str]
    skipped: list[Skipped]
    stats: dict[str, os.stat_result] = field(default_factory=dict)


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
    """Source files under ``repo`` with a known language, plus everything skipped with a reason.

    One ``lstat`` per entry and no ``realpath`` for plain files: the walk never enters a linked
    folder, so a plain file under the resolved root is inside it (``read_source`` checks again).
    """
    root = os.path.realpath(repo)
    result = WalkResult([], [])
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            result.skipped.append(Skipped(prefix.rstrip("/") or ".", f"unreadable: {exc.strerror}"))
            continue
        for entry in entries:
            _visit(root, entry, prefix + entry.name, exclude_dirs, result, pending)
    result.files.sort()
    result.skipped.sort(key=lambda s: s.path)
    return result


def _visit(
    root: str,
    entry: os.DirEntry[str],
    rel: str,
    exclude_dirs: frozenset[str],
    result: WalkResult,
    pending: list[tuple[str, str]],
) -> None:
    if entry.is_symlink():
        result.skipped.append(Skipped(rel, _link_reason(root, entry.path)))
    elif entry.is_dir(follow_symlinks=False):
        if entry.name in exclude_dirs:
            result.skipped.append(Skipped(rel, "excluded directory"))
        else:
            pending.append((entry.path, rel + "/"))
    elif language_of(rel) is None:
        result.skipped.append(Skipped(rel, "not a source file"))
    else:
        result.files.append(rel)
        result.stats[rel] = entry.stat(follow_symlinks=False)


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
    refusal = content_refusal(data, max_bytes)
    if refusal is not None:
        raise NotIndexable(refusal)
    return data


def content_refusal(data: bytes, max_bytes: int) -> str | None:
    """Why bytes read for a source file are not indexed (too large, binary), or None."""
    if len(data) > max_bytes:
        return f"too large (> {max_bytes} bytes)"
    if b"\0" in data[:SNIFF_BYTES]:
        return "binary (NUL byte)"
    return None
