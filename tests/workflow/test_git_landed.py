"""``is_landed``: whether an approved task's change is on the base branch, however it got
there. The real ``git`` lands the change (fast-forward, merge, cherry-pick) as a user would;
the check must agree with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from semspec.workflow.git.landed import is_landed
from tests.support.repos import make_repo

FILES = {"calc.py": "def add(a, b):\n    return a + b\n", "README.md": "# calc\n"}
ENV = {
    "GIT_AUTHOR_NAME": "u",
    "GIT_AUTHOR_EMAIL": "u@example.com",
    "GIT_COMMITTER_NAME": "u",
    "GIT_COMMITTER_EMAIL": "u@example.com",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=ENV, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def project(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose branch ``task`` holds one commit changing calc.py; that commit."""
    path = tmp_path / "repo"
    make_repo(path, FILES)
    git(path, "checkout", "-q", "-b", "task")
    (path / "calc.py").write_text(FILES["calc.py"] + "\n\ndef sub(a, b):\n    return a - b\n")
    git(path, "commit", "-qam", "add sub")
    commit = git(path, "rev-parse", "HEAD")
    git(path, "checkout", "-q", "main")
    return path, commit


def move_main(path: Path, name: str, text: str) -> None:
    (path / name).write_text(text)
    git(path, "commit", "-qam", f"change {name}")


def test_an_approved_commit_not_on_main_is_not_landed(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    assert not is_landed(path, commit, "main")
    move_main(path, "README.md", "# calc, moved\n")
    assert not is_landed(path, commit, "main")


def test_a_fast_forward_lands_it(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    git(path, "merge", "-q", "--ff-only", "task")
    assert is_landed(path, commit, "main")
    move_main(path, "README.md", "# calc, later\n")
    assert is_landed(path, commit, "main")


def test_a_merge_commit_lands_it(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    move_main(path, "README.md", "# calc, moved\n")
    git(path, "merge", "-q", "--no-ff", "-m", "merge task", "task")
    assert is_landed(path, commit, "main")


def test_a_rebased_or_cherry_picked_copy_lands_it(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    move_main(path, "README.md", "# calc, moved\n")
    git(path, "cherry-pick", commit)
    assert git(path, "rev-parse", "main") != commit
    assert is_landed(path, commit, "main")


def test_a_different_change_to_the_same_line_is_not_a_landing(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    move_main(path, "calc.py", FILES["calc.py"] + "\n\ndef sub(a, b):\n    return b - a\n")
    assert not is_landed(path, commit, "main")


def test_the_check_writes_no_object_and_moves_no_ref(tmp_path: Path) -> None:
    path, commit = project(tmp_path)
    move_main(path, "README.md", "# calc, moved\n")
    objects = sorted(p.name for p in (path / ".git" / "objects").rglob("*") if p.is_file())
    refs = git(path, "show-ref")
    assert not is_landed(path, commit, "main")
    assert sorted(p.name for p in (path / ".git" / "objects").rglob("*") if p.is_file()) == objects
    assert git(path, "show-ref") == refs


def test_a_commit_the_repository_no_longer_holds_counts_as_landed(tmp_path: Path) -> None:
    path, _ = project(tmp_path)
    assert is_landed(path, "0" * 40, "main")
    assert pygit2.Repository(str(path)).branches.get("main") is not None
