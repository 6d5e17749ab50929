"""The glob a learned convention applies to: the one the files of its approvals share."""

from __future__ import annotations

import pytest

from semspec.vocabulary.applies_to import glob_matches, glob_problem
from semspec.workflow.convention_scope import evidence_files, evidence_sample, shared_glob


@pytest.mark.parametrize(
    ("files", "glob"),
    [
        (["src/api/users.py", "src/api/v2/orders.py"], "src/api/**/*.py"),
        (["src/api/users.py"], "src/api/**/*.py"),
        (["src/api/users.py", "src/api/users.pyi"], "src/api/**"),
        (["setup.py", "src/a.py"], "**/*.py"),
        (["Makefile", "README"], "**"),
        (["./src//a.go", "src/b.go"], "src/**/*.go"),
        ([], ""),
    ],
)
def test_the_scope_is_the_shared_folder_and_extension(files: list[str], glob: str) -> None:
    assert shared_glob(files) == glob
    assert all(glob_matches(glob, f.replace("./", "").replace("//", "/")) for f in files)


def test_glob_characters_and_a_leading_bang_in_names_stand_for_themselves() -> None:
    glob = shared_glob(["!x[1]/a*b.py"])
    assert glob == "\\!x\\[1\\]/**/*.py"
    assert glob_problem(glob) is None
    assert glob_matches(glob, "!x[1]/c.py")
    assert not glob_matches(glob, "!x1/c.py")


def test_a_folder_too_deep_for_a_glob_gives_way_to_its_parent() -> None:
    deep = "/".join(["d" * 60] * 6) + "/a.py"
    glob = shared_glob([deep])
    assert glob_problem(glob) is None and len(glob) <= 256
    assert glob_matches(glob, deep)


def test_the_reviewer_glob_narrows_the_evidence_but_never_widens_it() -> None:
    changed = ["src/api/a.py", "docs/x.md"]
    assert evidence_files(["*"], changed) == ["docs/x.md", "src/api/a.py"]
    assert evidence_files(["src/**"], changed) == ["src/api/a.py"]
    # A glob naming none of the change's files is no evidence of its own: all files are.
    assert evidence_files(["lib/**"], changed) == ["docs/x.md", "src/api/a.py"]


def test_a_large_change_keeps_a_sample_with_the_same_glob() -> None:
    files = [f"src/m{i:04}/f.py" for i in range(1000)] + ["src/z/readme.md"]
    sample = evidence_sample(files, most=10)
    assert len(sample) == 10
    assert shared_glob(sample) == shared_glob(files) == "src/**"
    same_suffix = [f"pkg/a/{i}/x.py" for i in range(50)] + ["pkg/b/y.py"]
    assert shared_glob(evidence_sample(same_suffix, most=5)) == "pkg/**/*.py"
