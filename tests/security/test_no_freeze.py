"""What a model or agent-written code hands the worker never freezes it nor fills its memory.

The search tool's patterns come from the model: ``regex`` copies counted repeats out in full
when it compiles, with the interpreter lock held, so a short pattern could take gigabytes and
seconds of every thread's time; the search refuses such patterns before compiling them. (A
costly match is the other half: ``tests/test_worker_not_blocked.py`` runs one on the worker.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.agents.tools.search import MAX_QUERY_CHARS, search_files
from semspec.agents.workspace import ToolError, Workspace


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
