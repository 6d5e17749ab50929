"""Apply a unified diff to a worktree with libgit2, after checking every path it names.

A patch may add, change or delete regular files only: a git patch can also create a symbolic
link (mode 120000) pointing anywhere, or a submodule, which tools never do.
"""

from __future__ import annotations

import re

import pygit2
from pygit2.enums import ApplyLocation, FileMode

from semspec.agents.tools.files import check_regular
from semspec.agents.workspace import ToolError, Workspace

MAX_PATCH_BYTES = 2_000_000
# 0 is "no file on this side" (an added or a deleted file).
_FILE_MODES = frozenset({0, int(FileMode.BLOB), int(FileMode.BLOB_EXECUTABLE)})
_FILE_HEADER = re.compile(r"^--- (?P<old>\S+).*\n\+\+\+ (?P<new>\S+)", re.M)


def _strip(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def with_git_headers(patch: str) -> str:
    """Add the ``diff --git`` lines libgit2 needs when a model wrote a bare ``---/+++`` diff."""
    if "diff --git " in patch:
        return patch
    out: list[str] = []
    last = 0
    for match in _FILE_HEADER.finditer(patch):
        old, new = match["old"], match["new"]
        path = _strip(new if new != "/dev/null" else old)
        out.append(patch[last : match.start()])
        out.append(f"diff --git a/{path} b/{path}\n")
        if old == "/dev/null":
            out.append("new file mode 100644\n")
        elif new == "/dev/null":
            out.append("deleted file mode 100644\n")
        last = match.start()
    out.append(patch[last:])
    return "".join(out)


def apply_patch(workspace: Workspace, patch: str) -> list[str]:
    """Apply ``patch`` to the worktree and return the paths it touched."""
    if not patch.strip():
        raise ToolError("patch is empty; pass a unified diff (---/+++ headers and @@ hunks)")
    if len(patch.encode("utf-8", "surrogatepass")) > MAX_PATCH_BYTES:
        raise ToolError(f"patch is larger than {MAX_PATCH_BYTES} bytes; send smaller patches")
    try:
        repo = pygit2.Repository(str(workspace.root))
    except pygit2.GitError as exc:
        raise ToolError("apply_patch needs a git worktree; use write_file instead") from exc
    try:
        diff = pygit2.Diff.parse_diff(with_git_headers(patch))
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise ToolError(f"patch does not parse as a unified diff: {exc}") from exc
    touched: list[str] = []
    for item in diff:
        if item is None:
            continue
        modes = {int(item.delta.old_file.mode), int(item.delta.new_file.mode)}
        if not modes <= _FILE_MODES:
            raise ToolError(
                f"patch makes {item.delta.new_file.path!r} a symbolic link or a submodule; "
                "tools write regular files only"
            )
        for path in {item.delta.old_file.path, item.delta.new_file.path}:
            if path and path != "/dev/null":
                # ToolError on an escape, or on a FIFO libgit2 would wait on forever.
                check_regular(workspace.resolve(path, for_write=True), path)
                touched.append(path)
    if not touched:
        raise ToolError("patch names no files")
    if not repo.applies(diff, ApplyLocation.WORKDIR):
        raise ToolError(
            "patch does not apply to the current files (context lines differ); "
            "read the exact lines first, or use write_file with the whole new content"
        )
    try:
        repo.apply(diff, ApplyLocation.WORKDIR)
    except pygit2.GitError as exc:
        raise ToolError(f"patch did not apply: {exc}") from exc
    return sorted(set(touched))
