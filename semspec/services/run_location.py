"""Where a repository's run folder is when its config cannot be read, so that ``semspec down``
still stops what ``semspec up`` started: the folder ``up`` last used (noted in the checkout's git
directory, which is local to the clone, unlike the committed config), else the default
``.semspec/run``.
"""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import ServicesConfig
from semspec.services.git_exclude import git_dir_of

NOTE_FILE = "semspec-run-dir"


def remember_run_dir(repo: Path, run_dir: Path) -> None:
    """Note ``run_dir`` as the one ``up`` used for ``repo`` (nothing outside a git checkout)."""
    git_dir = git_dir_of(repo)
    if git_dir is None:
        return
    note = git_dir / NOTE_FILE
    text = f"{run_dir.resolve()}\n"
    try:
        if not note.is_file() or note.read_text(encoding="utf-8") != text:
            note.write_text(text, encoding="utf-8")
    except OSError:
        return


def last_run_dir(repo: Path) -> tuple[Path, str]:
    """The run folder ``up`` last used for ``repo`` and how it was found (``last used by
    semspec up`` or ``the default``)."""
    git_dir = git_dir_of(repo)
    note = git_dir / NOTE_FILE if git_dir is not None else None
    try:
        noted = note.read_text(encoding="utf-8").strip() if note and note.is_file() else ""
    except OSError:
        noted = ""
    if noted and Path(noted).is_dir():
        return Path(noted), "the one `semspec up` last used"
    return repo / ServicesConfig().run_dir, "the default"
