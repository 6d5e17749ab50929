"""Globs a reviewer notes (``noted_patterns``) are stored as conventions and later matched
against task files, so a hostile glob must never make matching costly. A backtracking regex
held the interpreter lock for seconds on ``*a*a*a*a*a*a*a*a*b`` and a 40-character name, and
for ages on a longer one; the matcher now does bounded work whatever the glob.

The costly match runs in a child process with a deadline: a regex holding the lock would
freeze this test process (no signal or thread could end it), so a regression fails the test
instead of hanging it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec import PathSpec

from semspec.vocabulary.applies_to import (
    MAX_GLOB_CHARS,
    MAX_PATH_CHARS,
    glob_matches,
    glob_problem,
)

PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b"
DEADLINE_S = 120.0

_MATCH_IN_A_CHILD = """
import sys
from pathlib import Path

from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.vocabulary.applies_to import glob_matches, glob_problem
from semspec.workflow.knowledge import conventions_for, record_convention

glob, folder = sys.argv[1], Path(sys.argv[2])
name = "src/" + "a" * 200 + ".py"
store = open_store(GraphConfig(), folder)
try:
    record_convention(store, "p", "noted", glob, "from a review", "task t1 reviewed by r")
    found = conventions_for(store, [name, "src/" + "a" * 40 + "b"])
finally:
    store.close()
print(glob_problem(glob), glob_matches(glob, name), [c.name for c in found])
"""


def test_a_reviewer_glob_full_of_stars_is_matched_from_the_graph_in_bounded_work(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _MATCH_IN_A_CHILD, PATHOLOGICAL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.stdout.split() == ["None", "False", "['noted']"]


def test_a_glob_longer_than_the_limit_is_refused_with_its_length() -> None:
    glob = "a/" * (MAX_GLOB_CHARS // 2) + "b"
    problem = glob_problem(glob)
    assert problem is not None and f"{len(glob)} characters" in problem
    assert not glob_matches(glob, glob)


def test_a_glob_with_a_backwards_range_is_refused_not_raised() -> None:
    problem = glob_problem("*.[z-a]")
    assert problem is not None and "not a valid glob" in problem
    assert not glob_matches("*.[z-a]", "x.b")


def test_a_path_longer_than_any_real_one_matches_nothing() -> None:
    assert glob_matches("**", "a" * MAX_PATH_CHARS)
    assert not glob_matches("**", "a" * (MAX_PATH_CHARS + 1))


_GLOB_PARTS = ["a", "b", "*", "**", "?", "/", "[ab]", "[]a]", "[a-c]", "\\*", "[", "]", " ", "!"]
_PATH_PARTS = ["a", "b", "c", "*", "[", "]", "!", " ", "-"]


@settings(max_examples=3000, deadline=None)
@given(
    glob=st.lists(st.sampled_from(_GLOB_PARTS), min_size=1, max_size=7).map("".join),
    names=st.lists(
        st.lists(st.sampled_from(_PATH_PARTS), min_size=1, max_size=4).map("".join),
        min_size=1,
        max_size=4,
    ),
    folder=st.booleans(),
)
@pytest.mark.slow  # 3,000 generated globs
def test_matching_agrees_with_pathspec_on_every_valid_glob(
    glob: str, names: list[str], folder: bool
) -> None:
    # pathspec's gitignore patterns stay the definition of a match (docs/sops.md); only its
    # backtracking engine is replaced.
    path = "/".join(names) + ("/" if folder else "")
    if glob_problem(glob) is not None:
        return
    with warnings.catch_warnings():
        # pathspec hands "[[" to re as is, which warns about nested sets to come.
        warnings.simplefilter("ignore", FutureWarning)
        expected = PathSpec.from_lines("gitignore", [glob]).match_file(path)
    assert glob_matches(glob, path) == expected
