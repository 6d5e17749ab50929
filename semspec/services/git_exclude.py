"""Keep semspec's run directory out of ``git status`` of the user's checkout.

Task worktrees, logs and service data live under ``.semspec/run/``. Listing that path in
``.git/info/exclude`` hides it without touching the user's ``.gitignore`` (which is theirs and
usually committed); the exclude file is local to the clone, just like the run directory.
"""

from __future__ import annotations

from pathlib import Path

import pygit2


def git_dir_of(repo: Path) -> Path | None:
    """The git directory of the checkout holding ``repo`` (a linked worktree's own one), or None
    outside a git checkout."""
    found = pygit2.discover_repository(str(repo))
    return None if found is None else Path(found)


def _common_dir(git_dir: Path) -> Path:
    """The repository's shared git directory (a linked worktree's own dir points to it)."""
    pointer = git_dir / "commondir"
    if pointer.is_file():
        target = Path(pointer.read_text(encoding="utf-8").strip())
        return target if target.is_absolute() else (git_dir / target).resolve()
    return git_dir


def exclude_from_git(repo: Path, path: Path) -> Path | None:
    """Add ``path`` (a directory in ``repo``'s checkout) to ``info/exclude`` if not yet there.

    Returns the exclude file written, or None when ``repo`` is not in a git checkout or
    ``path`` lies outside it. Running it again changes nothing.
    """
    found = pygit2.discover_repository(str(repo))
    if found is None:
        return None
    git_dir = Path(found)
    workdir = pygit2.Repository(str(git_dir)).workdir
    if workdir is None:
        return None
    try:
        relative = path.resolve().relative_to(Path(workdir).resolve())
    except ValueError:
        return None
    if not relative.parts:
        return None
    # Anchored at the top of the checkout, directory only.
    pattern = f"/{relative.as_posix()}/"
    exclude = _common_dir(git_dir) / "info" / "exclude"
    existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if pattern in existing.splitlines():
        return exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    with exclude.open("a", encoding="utf-8") as out:
        out.write(f"{prefix}# semspec: task worktrees, logs and service data\n{pattern}\n")
    return exclude
