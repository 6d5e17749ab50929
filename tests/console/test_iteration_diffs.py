"""Each iteration's change on the task page (issue 30 item 6): the developer step keeps the
worktree's state as a git tree, written without an index, and the page diffs each iteration's
tree against the one before, one collapsible block per iteration with its files inside."""

from __future__ import annotations

import os
import secrets
import string
import subprocess
from pathlib import Path

import pygit2

from semspec.console.iteration_diffs import MAX_ITERATION_CHARS, diffs_of
from semspec.workflow.git.diff import worktree_diff
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.task.iteration_tree import iteration_tree
from semspec.workflow.task.messages import LogEntry, TaskStatus
from tests.support.task_page import render_task

HOSTILE = "<script>alert(1)</script>"


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    # Only what git needs: never the whole environment.
    base = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=base | (env or {}), capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _state(wt: Path, base: str) -> str:
    """The worktree's state as the loop records it after a turn."""
    return iteration_tree(str(wt), base, worktree_diff(wt, base).files)


def _status(base: str, worktree: str, trees: list[str]) -> TaskStatus:
    log = [
        LogEntry(n, "developer", f"turn {n}", {"files": [], "tree": tree})
        for n, tree in enumerate(trees, 1)
    ]
    status = TaskStatus("t1", "title", "review", len(trees), 0, 3, log=log)
    status.base_commit, status.worktree = base, worktree
    return status


def test_the_tree_of_a_turn_is_what_git_add_and_write_tree_record_and_the_index_is_untouched(
    git_repo: Path, tmp_path: Path
) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (wt / "pkg").mkdir()
    (wt / "pkg" / "new.py").write_text("NEW = 1\n")
    (wt / "README.md").unlink()
    index = Path(_git(wt, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    index_before = index.read_bytes()
    tree = _state(wt, info.base_commit)
    assert index.read_bytes() == index_before  # the worktree's own index is not touched
    # The oracle: git itself, staging everything into a throwaway index.
    scratch = {"GIT_INDEX_FILE": str(tmp_path / "scratch-index")}
    _git(wt, "read-tree", info.base_commit, env=scratch)
    _git(wt, "add", "-A", env=scratch)
    assert tree == _git(wt, "write-tree", env=scratch)
    _git(git_repo, "fsck", "--strict")


def test_each_iteration_is_diffed_against_the_one_before(git_repo: Path, tmp_path: Path) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    first = _state(wt, info.base_commit)
    (wt / "notes.md").write_text(f"# Notes\n\n{HOSTILE}\n")
    second = _state(wt, info.base_commit)
    diffs = diffs_of(_status(info.base_commit, info.path, [first, second]), git_repo)
    one, two = diffs[1], diffs[2]
    assert one.against == "the base commit"
    assert [f.path for f in one.files] == ["calc.py"]
    assert two.against == "iteration 1"
    assert [f.path for f in two.files] == ["notes.md"]  # calc.py was iteration 1's change
    assert (two.insertions, two.deletions) == (3, 0)


def test_an_iteration_without_a_tree_of_its_own_is_diffed_against_the_base(
    git_repo: Path, tmp_path: Path
) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("X = 1\n")
    tree = _state(wt, info.base_commit)
    # Iteration 1 ran before trees were recorded (an old history): no entry names one.
    status = _status(info.base_commit, info.path, ["", tree])
    diffs = diffs_of(status, git_repo)
    assert 1 not in diffs
    assert diffs[2].against == "the base commit"


def test_a_pruned_tree_and_a_hostile_name_are_said_not_shown(git_repo: Path) -> None:
    base = str(pygit2.Repository(str(git_repo)).head.target)
    diffs = diffs_of(_status(base, "", ["0" * 40, "not-a-tree"]), git_repo)
    assert "no longer in the repository" in diffs[1].problem
    assert "no longer in the repository" in diffs[2].problem


def test_a_long_iteration_diff_is_cut_and_says_so(git_repo: Path, tmp_path: Path) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "big.txt").write_text("".join(f"line {n}\n" for n in range(MAX_ITERATION_CHARS)))
    diff = diffs_of(_status(info.base_commit, info.path, [_state(wt, info.base_commit)]), git_repo)
    assert diff[1].cut
    assert sum(len(line.text) for f in diff[1].files for line in f.lines) <= MAX_ITERATION_CHARS


def test_the_task_page_folds_each_iterations_diff_with_its_files_inside(
    git_repo: Path, tmp_path: Path
) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    first = _state(wt, info.base_commit)
    (wt / "notes.md").write_text(f"# Notes\n\n{HOSTILE}\n")
    status = _status(info.base_commit, info.path, [first, _state(wt, info.base_commit)])
    html = render_task(status, iteration_diffs=diffs_of(status, git_repo))
    second = html[html.index('<section data-iteration="2"') :]
    second = second[: second.index("</section>")]
    block = second[second.index('<details class="iteration-diff" data-iteration="2"') :]
    assert "<summary>Diff of iteration 2: 1 file(s)" in block
    assert "against iteration 1" in block
    assert '<details class="diff-file" data-path="notes.md" open>' in block
    assert "calc.py" not in block
    assert HOSTILE not in html and "&lt;script&gt;" in block


def test_a_key_in_an_iterations_change_is_masked(git_repo: Path, tmp_path: Path) -> None:
    info = ensure_worktree(git_repo, "it", "main", tmp_path / "wt")
    wt = Path(info.path)
    token = "ghp_" + "".join(secrets.choice(string.ascii_letters) for _ in range(36))
    (wt / "settings.py").write_text(f'TOKEN = "{token}"\n')
    diff = diffs_of(_status(info.base_commit, info.path, [_state(wt, info.base_commit)]), git_repo)
    shown = "\n".join(line.text for f in diff[1].files for line in f.lines)
    assert "settings.py" in shown
    assert token not in shown
