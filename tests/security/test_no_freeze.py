"""What a model or agent-written code hands the worker never freezes it nor fills its memory.

The search tool's patterns come from the model: ``regex`` copies counted repeats out in full
when it compiles, with the interpreter lock held, so a short pattern could take gigabytes and
seconds of every thread's time; the search refuses such patterns before compiling them. (A
costly match is the other half: ``tests/workflow/test_worker_not_blocked.py`` runs one on the
worker.)

Agent-written code may leave anything at a task file's path in its worktree (and a user in the
repository): the budget check and the reviewer's extra evidence read task files whole, so a FIFO
there would block the read and a 3 GiB sparse file would be read into memory. They read regular
files of bounded size only and say what they found instead. Each of these runs on a daemon
thread with a deadline, so a regression fails the test instead of hanging it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from semspec.agents.tools.deadline import in_thread
from semspec.agents.tools.search import MAX_QUERY_CHARS, search_files
from semspec.agents.workspace import ToolError, Workspace
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.context_activities import check_budget
from semspec.workflow.task.messages import BudgetInput, EnrichInput, TaskSpec
from semspec.workflow.task.messages import Workspace as TaskWorkspace
from tests.support.hostile_tree import SPARSE_BYTES
from tests.support.tasks import task_input

BOUND_S = 60.0


@pytest.mark.parametrize(
    "query",
    [
        "x{200000}",  # a count alone
        "((ab){500}){500}",  # nested counts multiply
        "(?:import ){500,}[a-z]{40}",  # an open range and a second count
    ],
)
def test_a_pattern_whose_repeats_would_be_written_out_large_is_refused_before_compiling(
    git_repo: Path, query: str
) -> None:
    with pytest.raises(ToolError, match="too large a regular expression"):
        search_files(Workspace(git_repo), query, regex=True)


def test_verbose_mode_cannot_split_a_count_past_the_size_check(git_repo: Path) -> None:
    # With (?x) the spaces vanish: x{200000}, which the size check reads as x{2}.
    with pytest.raises(ToolError, match=r"verbose mode \(\?x\) is not supported"):
        search_files(Workspace(git_repo), "(?x)x{2 0 0 0 0 0}", regex=True)


def test_a_query_longer_than_the_bound_is_refused(git_repo: Path) -> None:
    with pytest.raises(ToolError, match=f"more than {MAX_QUERY_CHARS}"):
        search_files(Workspace(git_repo), "def " * MAX_QUERY_CHARS)


def test_ordinary_counted_patterns_still_search(git_repo: Path) -> None:
    (git_repo / "ids.txt").write_text("sha 0123456789abcdef0123456789abcdef01234567\n")

    hits = search_files(Workspace(git_repo), r"\b[0-9a-f]{40}\b|\d{4}-\d{2}-\d{2}", regex=True)

    assert [(hit.path, hit.line) for hit in hits] == [("ids.txt", 1)]


def _plant(root: Path) -> None:
    """A 3 GiB sparse file, a FIFO and a link to the sparse file at task file paths."""
    with (root / "big.py").open("wb") as sparse:
        sparse.truncate(SPARSE_BYTES)
    os.mkfifo(root / "pipe.py")
    os.symlink(root / "big.py", root / "link.py")


def _spec(repo: Path, tmp_path: Path) -> TaskSpec:
    spec = task_input(repo, tmp_path / "unused.yaml", "t-files").spec
    return replace(spec, task_files=["calc.py", "big.py", "pipe.py", "link.py"])


async def test_the_budget_check_refuses_a_task_whose_files_are_not_regular_or_too_large(
    git_repo: Path, tmp_path: Path
) -> None:
    _plant(git_repo)
    spec = _spec(git_repo, tmp_path)

    outcome = await in_thread(lambda: check_budget(BudgetInput(spec)), BOUND_S)

    assert outcome.fits is False
    assert outcome.refusal is not None
    assert f"task file 'big.py' is {SPARSE_BYTES} bytes, larger than" in outcome.refusal
    assert "task file 'pipe.py' is a FIFO, not a regular file" in outcome.refusal
    assert "task file 'link.py' is a symbolic link, not a regular file" in outcome.refusal
    assert sum(line.startswith("unreadable: task file '") for line in outcome.lines) == 3
    assert outcome.file_tokens["big.py"] == outcome.file_tokens["pipe.py"] == 0


async def test_the_reviewers_task_file_evidence_says_what_is_there_instead_of_reading_it(
    git_repo: Path, tmp_path: Path
) -> None:
    _plant(git_repo)
    spec = _spec(git_repo, tmp_path)
    inp = EnrichInput(spec, TaskWorkspace(str(git_repo), "b", "c"), ["task_files"], [])

    enriched = await in_thread(lambda: TaskActivities(None).enrich(inp), BOUND_S)

    calc, big, pipe, link = enriched.text.split("\n\n### ")
    assert calc.startswith("### calc.py\ndef add(a, b):")
    assert big.startswith(f"big.py\n(not shown: 'big.py' is {SPARSE_BYTES} bytes, larger than")
    assert pipe.startswith("pipe.py\n(not shown: 'pipe.py' is a FIFO, not a regular file")
    assert link.startswith("link.py\n(not shown: 'link.py' is a symbolic link")
