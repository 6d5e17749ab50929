"""The worktree an agent may touch: every path is resolved and checked to stay inside it.

``.git/`` (the repository, or a worktree's link to it) and ``.semspec/`` (the config the gates
run with, and in the main repository the run folder: database, logs, other tasks' worktrees)
are not part of the project an agent works on: no tool lists, searches, reads or writes them.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

HIDDEN_NAMES = frozenset({".git", ".semspec"})
"""Folder (or file) names no tool shows or touches, at any depth."""

# What the model can do about an error, by errno; the system's own words come first.
_HINTS = {
    errno.ENAMETOOLONG: "use a shorter name (at most 255 bytes per path part)",
    errno.EROFS: "the worktree is read-only",
    errno.EACCES: "the file system does not allow it",
    errno.EPERM: "the file system does not allow it",
    errno.EEXIST: "a part of the path is a file, not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.ELOOP: "a symbolic link is in the way or loops",
    errno.EISDIR: "it is a folder; give a file path",
    errno.ENOENT: "it does not exist; use list_dir or search to find files",
}


class ToolError(Exception):
    """A tool call that cannot be carried out; the message goes back to the model verbatim."""


def os_error(exc: OSError, shown: str, action: str) -> ToolError:
    """A ``ToolError`` saying that ``shown`` cannot be ``action`` (e.g. "read") and why, in the
    system's words with its errno name, plus what the model can do about it."""
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno or 0)
    hint = _HINTS.get(exc.errno or 0)
    return ToolError(
        f"{shown!r} cannot be {action}: {reason}"
        + (f" ({name})" if name else "")
        + (f"; {hint}" if hint else "")
    )


class Workspace:
    """Path confinement for one worktree: realpath containment, no ``.git``/``.semspec``, no
    escaping links, no writes through a link."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(os.path.realpath(root))
        if not self.root.is_dir():
            raise ToolError(f"worktree {root} does not exist or is not a directory")

    def resolve(self, rel: str, *, for_write: bool = False) -> Path:
        """The real path of ``rel`` inside the worktree, or a ``ToolError`` saying why not."""
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("path is required (relative to the worktree root, e.g. 'src/app.py')")
        if "\x00" in rel:
            raise ToolError(f"path {rel!r} contains a NUL byte")
        try:
            os.fsencode(rel)
        except UnicodeEncodeError:
            raise ToolError(f"path {rel!r} is not valid text (a lone surrogate)") from None
        # An absolute path is fine only if it already names something inside the worktree.
        lexical = self.root / rel
        real = Path(os.path.realpath(lexical))
        if not self.contains(real):
            raise ToolError(
                f"path {rel!r} resolves outside the worktree (through '..' or a symlink); "
                "use paths relative to the worktree root"
            )
        hidden = sorted(HIDDEN_NAMES.intersection(real.relative_to(self.root).parts))
        if hidden:
            raise ToolError(
                f"path {rel!r} is inside {hidden[0]}/, which tools may not read or change"
            )
        if for_write:
            self._check_writable(lexical, real, rel)
        return real

    def _check_writable(self, lexical: Path, real: Path, rel: str) -> None:
        for path in (lexical, real):
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue  # a new file (NotADirectoryError and the like fail the write itself)
            except OSError as exc:
                raise os_error(exc, rel, "written") from None
            if stat.S_ISLNK(mode):
                # Its target is inside the worktree (resolve checked), but writing through a
                # link changes a file other than the one named: write the target by its name.
                raise ToolError(
                    f"path {rel!r} is a symbolic link; write the file it points to by its path"
                )
            if stat.S_ISDIR(mode):
                raise ToolError(f"path {rel!r} is a directory; give a file path")

    def contains(self, path: Path) -> bool:
        """Whether the real ``path`` is the root or below it."""
        return path == self.root or self.root in path.parents

    def relative(self, path: Path) -> str:
        """``path`` relative to the worktree root, with forward slashes."""
        return PurePosixPath(path.relative_to(self.root)).as_posix() or "."
