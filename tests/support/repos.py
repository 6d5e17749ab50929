"""Throwaway git repositories for tests, built with pygit2."""

from __future__ import annotations

from pathlib import Path

import pygit2

SIGNATURE = pygit2.Signature("semspec tests", "tests@semspec.invalid", 1_700_000_000, 0)


def make_repo(path: Path, files: dict[str, str], branch: str = "main") -> pygit2.Repository:
    """Create a repository at ``path`` with ``files`` committed on ``branch``."""
    path.mkdir(parents=True, exist_ok=True)
    repo = pygit2.init_repository(str(path), initial_head=branch)
    for rel, text in files.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    repo.create_commit(f"refs/heads/{branch}", SIGNATURE, SIGNATURE, "initial", tree, [])
    return repo


def commit_all(repo: pygit2.Repository, message: str) -> str:
    """Commit every change of ``repo``'s worktree on HEAD's branch; the new commit's id."""
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    return str(repo.create_commit("HEAD", SIGNATURE, SIGNATURE, message, tree, [repo.head.target]))
