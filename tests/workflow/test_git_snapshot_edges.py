"""Snapshots match what git itself would record for the same worktree, in awkward cases.

The oracle is git: ``git add -A`` into a throwaway index, then ``git write-tree``. Each case
changes a worktree, lists the changed paths the way the loop does (``worktree_diff``), takes
a snapshot and compares trees; ``git fsck --strict`` must stay clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from semspec.workflow.git.diff import worktree_diff
from semspec.workflow.git.snapshot import snapshot_branch


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, check=True, env={**os.environ, **(env or {})}
    )
    return done.stdout.decode("utf-8", "surrogateescape").strip()


def new_repo(path: Path, files: dict[bytes, bytes]) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    for rel, data in files.items():
        target = os.path.join(os.fsencode(path), rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(data)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "initial")
    return git(path, "rev-parse", "HEAD")


def snapshot_matches_git(repo: Path, head: str, tmp_path: Path) -> str:
    changed = worktree_diff(repo, head).files
    commit = snapshot_branch(repo, repo, head, head, changed, "cp", "cp/1")
    index = {"GIT_INDEX_FILE": str(tmp_path / "oracle-index")}
    git(repo, "read-tree", head, env=index)
    git(repo, "add", "-A", env=index)
    assert git(repo, "rev-parse", f"{commit}^{{tree}}") == git(repo, "write-tree", env=index)
    git(repo, "fsck", "--full", "--strict")
    return commit


def test_a_directory_replaced_by_a_file_and_a_file_by_a_directory(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    head = new_repo(repo, {b"a/b.py": b"B\n", b"a/c.py": b"C\n", b"f": b"F\n", b"k": b"K\n"})
    shutil.rmtree(repo / "a")
    (repo / "a").write_text("now a file\n")
    (repo / "f").unlink()
    (repo / "f").mkdir()
    (repo / "f" / "inner.py").write_text("I\n")
    snapshot_matches_git(repo, head, tmp_path)


def test_non_utf8_names_symlinks_modes_and_deleted_folders(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    odd = b"caf\xe9.txt"  # Latin-1, not UTF-8
    head = new_repo(repo, {odd: b"x\n", b"gone/one.py": b"1\n", b"run.sh": b"echo\n"})
    with open(os.path.join(os.fsencode(repo), odd), "wb") as out:
        out.write(b"changed\n")
    shutil.rmtree(repo / "gone")
    os.chmod(repo / "run.sh", 0o755)
    os.symlink("run.sh", repo / "link")
    snapshot_matches_git(repo, head, tmp_path)


def test_a_submodule_is_recorded_at_its_checkout_not_dropped(tmp_path: Path) -> None:
    library = tmp_path / "library"
    new_repo(library, {b"lib.py": b"L = 1\n"})
    repo = tmp_path / "r"
    new_repo(repo, {b"k": b"K\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "sub")
    git(repo, "commit", "-qm", "add sub")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "sub" / "lib.py").write_text("dirty\n")
    (repo / "k").write_text("K2\n")
    commit = snapshot_matches_git(repo, head, tmp_path)
    assert git(repo, "ls-tree", commit, "sub").startswith("160000 commit")


@pytest.mark.parametrize("setting", [("core.fsyncObjectFiles", "true"), ("core.fsync", "pack")])
def test_a_repository_that_asks_for_synced_objects_still_snapshots(
    tmp_path: Path, setting: tuple[str, str]
) -> None:
    repo = tmp_path / "r"
    head = new_repo(repo, {b"a.py": b"A\n"})
    git(repo, "config", *setting)
    (repo / "a.py").write_text("A2\n")
    snapshot_matches_git(repo, head, tmp_path)
