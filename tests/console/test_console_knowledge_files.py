"""The knowledge page's file matching agrees with ``glob_matches`` on every path (its filters
only skip paths that cannot match), and keeps its answers while the git index is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.console.knowledge_files import TrackedFiles, literal_tail, tracked_files
from semspec.vocabulary.applies_to import glob_matches
from tests.support.repos import make_repo

PATHS = sorted(
    [
        "README.md", "a.py", "src/a.py", "src/b/c.py", "lib/src/a.py", "src/x.py/inner.txt",
        "docs/guide.md", "docs/api/ref.md", "docs", "x/docs/y.md", "app/db/queries.py",
        "a[b.py", "weird\\name.py", "src/a.pyc", "tests/test_a.py", ".semspec/config.yaml",
        "mdurl/_format.py", "mdurl/LICENSE", "src/main.rs", "lib/util.rs",
    ]
)  # fmt: skip
GLOBS = [
    "*", "**", "**/", "*/", "/", "*.py", "**/*.py", "src/*.py", "/src/*.py", "src/**", "src/",
    "docs", "docs/", "docs/**/*.md", "**/docs/*.md", "*.md", "a[b.py", "*.[pr][ys]", "src/?.py",
    "src/**/*.py", "mdurl/*.py", "**/test_*.py", "app/db/*", "lib/**/*.rs", "*.py[c]",
    "weird\\\\name.py", ".semspec/", "x.py", "src/x.py", "!negated", "#comment", "",
]  # fmt: skip


@pytest.mark.parametrize("glob", GLOBS)
def test_matching_agrees_with_glob_matches_on_every_path(glob: str) -> None:
    expected = [p for p in PATHS if glob_matches(glob, p)]
    assert TrackedFiles(PATHS).matching([glob]) == expected


def test_several_globs_match_the_union_of_their_paths_once_each() -> None:
    files = TrackedFiles(PATHS)
    both = files.matching(["src/*.py", "**/a.py"])
    assert both == sorted({*files.matching(["src/*.py"]), *files.matching(["**/a.py"])})
    assert len(both) == len(set(both))


def test_the_literal_tail_is_the_text_after_the_last_wildcard_of_the_last_segment() -> None:
    assert literal_tail("**/*.py") == ".py"
    assert literal_tail("src/") == "src"
    assert literal_tail("src/**") == ""
    assert literal_tail("*.[ch]") == ""
    assert literal_tail("a[b.py") == "a[b.py"
    assert literal_tail("x\\*.py") == ""


def test_tracked_files_are_read_again_once_the_index_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "", "b.md": ""})
    first = tracked_files(tmp_path / "r")
    assert first.paths == ["a.py", "b.md"]
    assert tracked_files(tmp_path / "r") is first
    (tmp_path / "r" / "c.py").write_text("", encoding="utf-8")
    repo.index.add("c.py")
    repo.index.write()
    assert tracked_files(tmp_path / "r").paths == ["a.py", "b.md", "c.py"]
