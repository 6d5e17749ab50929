"""Extra mounts of a fenced command agent: its private home and its worktree's git metadata.

An agent CLI keeps state in its home (sessions, settings, a trajectory, a lock file) and fails
when the home is read-only, as the worker's is inside the fence (issue 24: Codex cannot start,
every Claude Code Bash call fails, mini-swe-agent exits writing under ``~/.config``). So a
command agent gets a home of its own per task, in the run folder, bound read-write; nothing of
the worker's home is in it.

A git worktree's ``.git`` is a file naming its folder in the main repository
(``<repo>/.git/worktrees/<id>``). When the repository lies under ``/tmp``, the fence's private
``/tmp`` hides it and every git command in the worktree fails (Aider on ``config.lock``), so the
main ``.git`` is bound back read-only and the worktree's own git folder read-write: the agent
can read history and stage, not move the repository's branches.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_DIRS = (".config", ".cache", ".local/share", ".local/state")


def home_env(home: Path) -> dict[str, str]:
    """``HOME`` and the XDG folders pointing into ``home``."""
    root = str(home)
    return {
        "HOME": root,
        "XDG_CONFIG_HOME": f"{root}/.config",
        "XDG_CACHE_HOME": f"{root}/.cache",
        "XDG_DATA_HOME": f"{root}/.local/share",
        "XDG_STATE_HOME": f"{root}/.local/state",
    }


GIT_IDENTITY = "[user]\n\tname = semspec agent\n\temail = agent@semspec.invalid\n"
"""A git identity for the home: a CLI that finds none writes one into the repository's config
(Aider does), which the fence keeps read-only. semspec commits under its own name anyway."""


def make_home(home: Path) -> Path:
    """Create ``home``, its XDG folders and a ``.gitconfig`` with an identity (blocking),
    private to this user; what the CLI left there from an earlier iteration stays."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for sub in HOME_DIRS:
        (home / sub).mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text(GIT_IDENTITY, encoding="utf-8")
    return home


def home_binds(home: Path | None) -> list[str]:
    """bubblewrap options binding ``home`` read-write (none without one)."""
    if home is None or not os.path.isdir(home):
        return []
    real = os.path.realpath(home)
    return ["--bind", real, real]


def worktree_git_dirs(worktree: Path) -> tuple[str, str] | None:
    """The main repository's git folder and the worktree's own, when ``worktree`` is a linked
    worktree (its ``.git`` a ``gitdir:`` file); None otherwise."""
    marker = Path(worktree) / ".git"
    if not marker.is_file():
        return None
    try:
        first = marker.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    own = Path(first.removeprefix("gitdir:").strip())
    own = own if own.is_absolute() else Path(worktree) / own
    try:
        common = (own / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    main = Path(common) if Path(common).is_absolute() else own / common
    own_real, main_real = os.path.realpath(own), os.path.realpath(main)
    if not (os.path.isdir(own_real) and os.path.isdir(main_real)):
        return None
    return main_real, own_real


def worktree_git_binds(worktree: Path) -> list[str]:
    """bubblewrap options showing the worktree's git metadata: the main ``.git`` read-only,
    the worktree's own git folder read-write."""
    dirs = worktree_git_dirs(worktree)
    if dirs is None:
        return []
    main, own = dirs
    return ["--ro-bind", main, main, "--bind", own, own]
