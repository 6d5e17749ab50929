"""The worktree an agent may touch: every path is resolved and checked to stay inside it."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


class ToolError(Exception):
    """A tool call that cannot be carried out; the message goes back to the model verbatim."""


class Workspace:
    """Path confinement for one worktree: realpath containment, no ``.git``, no escaping links."""

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
        # An absolute path is fine only if it already names something inside the worktree.
        real = Path(os.path.realpath(self.root / rel))
        if not self.contains(real):
            raise ToolError(
                f"path {rel!r} resolves outside the worktree (through '..' or a symlink); "
                "use paths relative to the worktree root"
            )
        relative = real.relative_to(self.root)
        if ".git" in relative.parts:
            raise ToolError(f"path {rel!r} is inside .git/, which tools may not read or change")
        if for_write and real.is_dir():
            raise ToolError(f"path {rel!r} is a directory; give a file path")
        return real

    def contains(self, path: Path) -> bool:
        """Whether the real ``path`` is the root or below it."""
        return path == self.root or self.root in path.parents

    def relative(self, path: Path) -> str:
        """``path`` relative to the worktree root, with forward slashes."""
        return PurePosixPath(path.relative_to(self.root)).as_posix() or "."
