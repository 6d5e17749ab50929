"""``{changed_files}`` in a gate's command: the tool runs on the change's files only, each an
argument of the shell and never shell text (issue 29, item 2). Real git and a real shell."""

from __future__ import annotations

from pathlib import Path

import pygit2

from semspec.workflow.gates.changed_files import NOTHING_CHANGED, specs_for_change
from semspec.workflow.gates.runner import run_gates
from semspec.workflow.gates.types import GateSpec
from tests.support.repos import make_repo

FILES = {"a.py": "a = 1\n", "c.py": "c = 1\n", "docs/x.md": "# x\n", "sub/d.py": "d = 1\n"}


def changed_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    make_repo(repo, FILES)
    base = str(pygit2.Repository(str(repo)).head.target)
    (repo / "a.py").write_text("a = 2\n")
    (repo / "c.py").unlink()
    (repo / "docs" / "x.md").write_text("# y\n")
    (repo / "sub" / "d.py").write_text("d = 2\n")
    (repo / "$(touch pwned) -rf.py").write_text("x = 1\n")
    return repo, base


def args_printed(output: str) -> list[str]:
    return [line for line in output.splitlines() if line]


async def test_the_gate_gets_the_changed_files_matching_its_glob_as_arguments(
    tmp_path: Path,
) -> None:
    repo, base = changed_repo(tmp_path)
    spec = GateSpec("lint", "printf '%s\\n' {changed_files:*.py}")
    (ready,) = specs_for_change([spec], repo, base)
    assert ready.command == "printf '%s\\n' \"$@\""
    (result,) = (await run_gates([ready], repo, tmp_path / "logs", 16_384)).results
    assert result.passed
    assert args_printed(result.output) == ["./$(touch pwned) -rf.py", "./a.py", "./sub/d.py"]
    assert not (repo / "pwned").exists(), "a file name ran as shell text"


async def test_names_are_relative_to_the_gate_working_dir_and_outside_ones_left_out(
    tmp_path: Path,
) -> None:
    repo, base = changed_repo(tmp_path)
    spec = GateSpec("lint", "printf '%s\\n' {changed_files}", working_dir="sub")
    (ready,) = specs_for_change([spec], repo, base)
    (result,) = (await run_gates([ready], repo, tmp_path / "logs", 16_384)).results
    assert args_printed(result.output) == ["./d.py"]


async def test_a_gate_whose_files_did_not_change_runs_a_no_op_that_says_so(
    tmp_path: Path,
) -> None:
    repo, base = changed_repo(tmp_path)
    spec = GateSpec("lint", "false {changed_files:*.rs}")
    (ready,) = specs_for_change([spec], repo, base)
    assert ready.command == NOTHING_CHANGED and ready.args == []
    (result,) = (await run_gates([ready], repo, tmp_path / "logs", 16_384)).results
    assert result.passed and "no changed file" in result.output


def test_gates_without_the_placeholder_are_untouched(tmp_path: Path) -> None:
    repo, base = changed_repo(tmp_path)
    spec = GateSpec("test", "python -m pytest -q")
    assert specs_for_change([spec], repo, base) == [spec]
