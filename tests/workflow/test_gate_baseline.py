"""Gates judge the change: findings and failing tests already on the base commit do not count
(issue 29, item 2). Real git, real ruff and pytest; no stack."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pygit2
import pytest

from semspec.workflow.gates.baseline import (
    BaseCommit,
    GateSetup,
    cache_key,
    export_commit,
    judge_against_base,
)
from semspec.workflow.gates.findings import split_new
from semspec.workflow.gates.runner import run_gates
from semspec.workflow.gates.types import GateItem, GateReport, GateSpec
from tests.support.repos import make_repo

RUFF = str(Path(sys.executable).parent / "ruff")
LIB = "import os\n\n\ndef add(a, b):\n    return a + b\n"
TESTS = (
    "from lib import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_known_broken():\n    assert add(1, 1) == 3\n"
)
GATES = [
    GateSpec("lint", f"{RUFF} check --output-format json --no-cache .", format="ruff-json"),
    GateSpec("test", f"{sys.executable} -m pytest -q -p no:cacheprovider", format="pytest"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    make_repo(path, {"lib.py": LIB, "test_lib.py": TESTS, ".gitignore": "__pycache__/\n"})
    return path


def head(repo: Path) -> str:
    return str(pygit2.Repository(str(repo)).head.target)


async def judged(repo: Path, run: Path, specs: list[GateSpec] = GATES) -> GateReport:
    logs = run / "logs"
    report = await run_gates(specs, repo, logs, 16_384)
    base = BaseCommit(head(repo), run / "baselines")
    return await judge_against_base(report, specs, repo, base, GateSetup(logs, 16_384))


@pytest.mark.slow  # runs pytest gates on the change and its base
async def test_a_clean_change_passes_both_gates_with_the_base_failures_set_aside(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "lib.py").write_text(LIB + "\n\ndef sub(a, b):\n    return a - b\n")
    report = await judged(repo, tmp_path / "run")
    lint, test = report.results
    assert lint.exit_code == 1 and lint.passed and lint.known == 1 and not lint.items
    assert lint.known_examples[0].rule == "F401"
    assert test.exit_code == 1 and test.passed and test.known == 1 and not test.items
    assert "1 test already failing on the base commit" in test.note
    assert report.passed and report.feedback_text() == ""


@pytest.mark.slow  # runs pytest gates on the change and its base
async def test_a_new_finding_and_a_broken_test_are_exactly_the_items(
    repo: Path, tmp_path: Path
) -> None:
    broken = "import os\nimport sys\n\n\ndef add(a, b):\n    return a - b\n"
    (repo / "lib.py").write_text(broken)
    report = await judged(repo, tmp_path / "run")
    lint, test = report.results
    assert not lint.passed and lint.known == 1
    assert [(i.path, i.line, i.rule) for i in lint.items] == [("lib.py", 2, "F401")]
    assert "sys" in lint.items[0].message
    assert not test.passed and test.known == 1
    assert [i.test for i in test.items] == ["test_lib.py::test_add"]
    feedback = report.feedback_text()
    assert "test_lib.py::test_add" in feedback and "lib.py:2: F401" in feedback
    assert "test_known_broken" not in feedback


@pytest.mark.slow  # runs pytest gates on the change and its base
async def test_a_finding_moved_down_by_an_edit_is_still_the_base_one(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "lib.py").write_text('"""Docs."""\n\n# more\n' + LIB)
    (lint,) = (await judged(repo, tmp_path / "run", GATES[:1])).results
    assert lint.passed and lint.known == 1 and not lint.items


async def test_a_moved_file_keeps_its_base_findings(repo: Path, tmp_path: Path) -> None:
    (repo / "lib.py").rename(repo / "core.py")
    (repo / "test_lib.py").write_text(TESTS.replace("from lib", "from core"))
    (lint,) = (await judged(repo, tmp_path / "run", GATES[:1])).results
    assert lint.passed and lint.known == 1


@pytest.mark.slow  # runs pytest gates on the change and its base
async def test_the_base_is_run_once_and_cached_per_commit_and_command(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "lib.py").write_text(LIB + "x = 1\n")
    run = tmp_path / "run"
    await judged(repo, run, GATES[:1])
    cache = run / "baselines" / f"{cache_key(head(repo), GATES[0])}.json"
    stored = json.loads(cache.read_text())
    assert [i["rule"] for i in stored["items"]] == ["F401"]
    # The cache is what the next judgement reads: one it says is clean makes the finding new.
    cache.write_text(json.dumps({"commit": head(repo), "items": []}))
    (lint,) = (await judged(repo, run, GATES[:1])).results
    assert not lint.passed and [i.rule for i in lint.items] == ["F401"]
    assert not list((run / "baselines" / "trees").iterdir()), "the export is left behind"


async def test_baseline_off_counts_every_finding(repo: Path, tmp_path: Path) -> None:
    spec = GateSpec("lint", GATES[0].command, format="ruff-json", baseline="off")
    (lint,) = (await judged(repo, tmp_path / "run", [spec])).results
    assert not lint.passed and [i.rule for i in lint.items] == ["F401"] and lint.known == 0


async def test_unreadable_output_keeps_the_gate_failed_with_its_raw_output(
    repo: Path, tmp_path: Path
) -> None:
    spec = GateSpec("lint", "echo 'boom: config error'; exit 2", format="ruff-json")
    (lint,) = (await judged(repo, tmp_path / "run", [spec])).results
    assert not lint.passed and not lint.items and "boom" in lint.output


def test_export_writes_the_commit_files_and_nothing_of_the_worktree(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "lib.py").write_text("changed\n")
    export_commit(repo, head(repo), tmp_path / "export")
    assert (tmp_path / "export" / "lib.py").read_text() == LIB
    assert not (tmp_path / "export" / ".git").exists()


def item(path: str, line: int, rule: str = "F401", message: str = "unused") -> GateItem:
    return GateItem(path, line, rule, message)


def test_split_matches_repeated_findings_by_nearest_line() -> None:
    base = [item("a.py", 10), item("a.py", 30)]
    current = [item("a.py", 12), item("a.py", 20), item("a.py", 31)]
    split = split_new(current, base)
    assert split.new == [item("a.py", 20)]


def test_split_blanks_numbers_in_messages_and_maps_renames() -> None:
    base = [item("old.py", 5, "misc", "defined on line 3")]
    current = [item("new.py", 9, "misc", "defined on line 7")]
    assert split_new(current, base, {"new.py": "old.py"}).new == []
    assert split_new(current, base).new == current


@pytest.mark.slow  # runs pytest gates on the change and its base
async def test_a_run_stopped_by_a_collection_error_on_both_sides_does_not_pass(
    repo: Path, tmp_path: Path
) -> None:
    """pytest stops the whole session at a collection error (exit 2): no test ran, so the
    same error on the base commit must not let a change that breaks ``add`` through."""
    broken_module = {"test_broken.py": "import nowhere_to_be_found\n"}
    path = tmp_path / "collect"
    make_repo(path, {"lib.py": LIB, "test_lib.py": TESTS, **broken_module})
    (path / "lib.py").write_text(LIB.replace("a + b", "a - b"))
    (test,) = (await judged(path, tmp_path / "run", GATES[1:])).results
    assert test.exit_code == 2 and not test.passed
    assert [i.test for i in test.items] == ["test_broken.py"]
    assert "stopped early" in test.note
