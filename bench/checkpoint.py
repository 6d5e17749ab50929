"""A checkpoint branch as a task makes one, side by side with the ``git`` CLI doing the same.

The repository has 300 files in ten folders; before each checkpoint the developer has rewritten
20 files of 10 KB in four folders (new content each time, so every blob is new). semspec's
snapshot (``snapshot_branch``: the base tree rebuilt along the changed paths, objects written
through libgit2, the branch created by pygit2) runs against git plumbing in subprocesses
(``add`` the paths, ``write-tree``, ``commit-tree``, ``branch``) on a copy of the same
repository; both are given the changed paths and must record the same tree. Every timed run
starts after ``os.sync()``, so neither side pays for the other's pending write-back.

Run: ``python bench/checkpoint.py`` (``--quick``: 3 rounds, 30 files, what a test runs). The
last line is one JSON object: ``snapshot_ms`` and ``git_cli_ms`` (medians), ``git_ratio`` (CLI
time over snapshot time) and the set-up.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2

from semspec.workflow.git import snapshot
from semspec.workflow.git.snapshot import snapshot_branch

ROUNDS = 31
REPO_FILES = 300
CHANGED_FILES = 20
FILE_BYTES = 10_240
SIGNATURE = pygit2.Signature("bench", "bench@semspec.invalid", 1_700_000_000, 0)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@semspec.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@semspec.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
}


def make_repo(path: Path) -> None:
    repo = pygit2.init_repository(str(path), initial_head="main")
    for number in range(REPO_FILES):
        target = path / f"pkg{number % 10}" / f"module_{number}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"VALUE_{number} = {number}\n" * 40, encoding="utf-8")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    repo.create_commit("refs/heads/main", SIGNATURE, SIGNATURE, "initial", tree, [])


def edit(path: Path, round_number: int) -> list[str]:
    """Rewrite CHANGED_FILES files (FILE_BYTES each, new content); return their paths."""
    changed = []
    for number in range(CHANGED_FILES):
        rel = f"pkg{number % 4}/module_{number * 10 + number % 4}.py"
        line = f"changed_{round_number}_{number} = {round_number * number}\n"
        (path / rel).write_text((line * (FILE_BYTES // len(line) + 1))[:FILE_BYTES])
        changed.append(rel)
    return changed


def checkpoint_semspec(path: Path, name: str, changed: list[str]) -> None:
    snapshot_branch(path, path, "HEAD", "HEAD", changed, name, name)


def checkpoint_cli(path: Path, name: str, changed: list[str]) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=path, capture_output=True, text=True, check=True, env=GIT_ENV
        )
        return done.stdout.strip()

    git("add", "--", *changed)
    tree = git("write-tree")
    commit = git("commit-tree", tree, "-p", "HEAD", "-m", name)
    git("branch", name, commit)


def timed(run: Callable[..., None], *args: object) -> float:
    """Milliseconds ``run(*args)`` takes, started with nothing left to write back."""
    os.sync()
    start = time.perf_counter()
    run(*args)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    semspec_ms, cli_ms = [], []
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = Path(tmp) / "semspec", Path(tmp) / "cli"
        make_repo(ours)
        shutil.copytree(ours, theirs)
        for number in range(ROUNDS):
            name = f"semspec/checkpoint/bench/{number}"
            changed = edit(ours, number)
            edit(theirs, number)
            semspec_ms.append(timed(checkpoint_semspec, ours, name, changed))
            cli_ms.append(timed(checkpoint_cli, theirs, name, changed))
            trees = [
                pygit2.Repository(str(path)).branches.local[name].peel(pygit2.Commit).tree_id
                for path in (ours, theirs)
            ]
            assert trees[0] == trees[1], f"round {number}: the two checkpoints differ"
    ours_median, cli_median = statistics.median(semspec_ms), statistics.median(cli_ms)
    print(f"snapshot code: {snapshot.__file__}")
    print(
        f"checkpoint: {CHANGED_FILES} files of {FILE_BYTES // 1024} KB changed in a "
        f"{REPO_FILES}-file repository, median of {ROUNDS}"
    )
    print(f"  semspec snapshot  {ours_median:>8.2f} ms (min {min(semspec_ms):.2f})")
    print(f"  git CLI           {cli_median:>8.2f} ms (min {min(cli_ms):.2f})")
    print(f"  ratio             {cli_median / ours_median:>8.1f}x")
    figures = {
        "snapshot_ms": round(ours_median, 3),
        "git_cli_ms": round(cli_median, 3),
        "git_ratio": round(cli_median / ours_median, 3),
        "changed_files": CHANGED_FILES,
        "file_bytes": FILE_BYTES,
        "repo_files": REPO_FILES,
        "rounds": ROUNDS,
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds in a 30-file repository")
    if parser.parse_args().quick:
        ROUNDS, REPO_FILES, CHANGED_FILES = 3, 30, 3
    main()
