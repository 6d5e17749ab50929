"""A task's diff for its page, on real git repositories: from its worktree while it has one,
from its commit once the worktree is gone, cut to the page's bound."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pygit2

from semspec.console.task_diff import task_diff
from semspec.workflow.task.messages import TaskStatus
from tests.support.repos import make_repo


def commit_change(repo: pygit2.Repository, path: str, text: str) -> str:
    """Commit ``path`` with ``text`` on HEAD; the new commit's id."""
    workdir = Path(repo.workdir)
    (workdir / path).write_text(text, encoding="utf-8")
    repo.index.add(path)
    repo.index.write()
    tree = repo.index.write_tree()
    sig = pygit2.Signature("t", "t@example.com")
    head = repo.head.target
    return str(repo.create_commit("HEAD", sig, sig, "change", tree, [head]))


def test_a_finished_task_is_diffed_from_its_commit_against_its_base(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "one\n"})
    base = str(repo.head.target)
    commit = commit_change(repo, "a.py", "one\ntwo\n")
    status = TaskStatus("t", "", "done", 1, 0, 1, base_commit=base, commit_id=commit,
                        worktree=str(tmp_path / "gone"))  # fmt: skip
    diff = asyncio.run(task_diff(status, tmp_path / "r"))
    assert (diff.source, diff.files, diff.insertions, diff.deletions) == ("commit", ["a.py"], 1, 0)
    assert "+two" in diff.patch and not diff.cut and not diff.problem


def test_a_running_task_is_diffed_from_its_worktree_and_a_long_patch_is_cut(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "one\n"})
    (tmp_path / "r" / "new.py").write_text("x = 1\n" * 1000, encoding="utf-8")
    status = TaskStatus("t", "", "developer", 1, 0, 1, base_commit=str(repo.head.target),
                        worktree=str(tmp_path / "r"))  # fmt: skip
    diff = asyncio.run(task_diff(status, tmp_path / "r", max_chars=500))
    assert (diff.source, diff.files, diff.insertions) == ("worktree", ["new.py"], 1000)
    assert diff.cut and len(diff.patch) < 700


def test_a_task_without_a_workspace_or_whose_commit_is_unknown_says_why(tmp_path: Path) -> None:
    make_repo(tmp_path / "r", {"a.py": "one\n"})
    starting = TaskStatus("t", "", "starting", 0, 0, 1)
    assert asyncio.run(task_diff(starting, tmp_path / "r")).problem == (
        "the task has no workspace yet"
    )
    lost = TaskStatus("t", "", "done", 1, 0, 1, base_commit="0" * 40, commit_id="1" * 40)
    assert "no commit" in asyncio.run(task_diff(lost, tmp_path / "r")).problem
