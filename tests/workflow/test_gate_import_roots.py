"""Which folders of a worktree a Python gate imports from, and which failures are a missing
program (``semspec/workflow/gates/import_roots.py``, ``missing_tools.py``). The whole path, with
editable installs and a stack, is ``tests/scenarios/test_gates_import_the_worktree.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from semspec.core.errors import GateError
from semspec.core.sandbox import UNFENCED
from semspec.workflow.gates.go_replace import check_go_replaces
from semspec.workflow.gates.import_roots import (
    check_imports,
    gate_import_roots,
    import_roots,
    python_path_env,
    top_level_names,
)
from semspec.workflow.gates.missing_tools import missing_tool, refuse_missing_tools
from semspec.workflow.gates.types import GateResult


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def rel(root: Path, paths: list[Path]) -> list[str]:
    return [str(p.relative_to(root.resolve())) or "." for p in paths]


@pytest.mark.parametrize(
    ("files", "roots", "names"),
    [
        ({"src/calc/__init__.py": "", "tests/test_calc.py": ""}, ["src"], ["calc"]),
        ({"calc/__init__.py": "", "tests/test_calc.py": "", "setup.py": ""}, ["."], ["calc"]),
        ({"calc.py": "", "conftest.py": "", "noxfile.py": ""}, ["."], ["calc"]),
        # Several packages, and a namespace package known by its children.
        (
            {"src/one/__init__.py": "", "src/two.py": "", "src/acme/widgets/__init__.py": ""},
            ["src"],
            ["acme.widgets", "one", "two"],
        ),
        (
            {
                "pyproject.toml": '[tool.setuptools]\npackage-dir = {"" = "lib"}\n',
                "lib/calc/__init__.py": "",
                "src/other/__init__.py": "",
            },
            ["lib"],
            ["calc"],
        ),
        (
            {
                "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["code/calc"]\n',
                "code/calc/__init__.py": "",
            },
            ["code"],
            ["calc"],
        ),
        (
            {
                "pyproject.toml": '[tool.poetry]\npackages = [{include = "calc", from = "py"}]\n',
                "py/calc/__init__.py": "",
            },
            ["py"],
            ["calc"],
        ),
        (
            {"setup.cfg": "[options]\npackage_dir =\n    =pkgs\n", "pkgs/calc/__init__.py": ""},
            ["pkgs"],
            ["calc"],
        ),
        # A stdlib name and a tests folder are not the project's code; a folder outside the
        # worktree is never a root.
        (
            {
                "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["../.."]\n',
                "json/__init__.py": "",
                "tests/__init__.py": "",
            },
            ["."],
            [],
        ),
    ],
    ids=["src", "flat", "modules", "several", "setuptools", "hatch", "poetry", "setup.cfg", "x"],
)
def test_import_roots_follow_the_layout(
    tmp_path: Path, files: dict[str, str], roots: list[str], names: list[str]
) -> None:
    root = tree(tmp_path / "wt", files)
    found = import_roots(root)
    assert rel(root, found) == roots
    assert sorted(top_level_names(found)) == names


def test_python_path_env_puts_the_roots_first() -> None:
    env = python_path_env({"PATH": "/bin", "PYTHONPATH": "/extra"}, ["/wt/src"])
    assert env == {"PATH": "/bin", "PYTHONPATH": f"/wt/src{os.pathsep}/extra"}
    assert python_path_env({"PATH": "/bin"}, []) == {"PATH": "/bin"}


def probe_env() -> dict[str, str]:
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}


def test_the_check_names_where_each_package_comes_from(tmp_path: Path) -> None:
    root = tree(tmp_path / "wt", {"src/calc_wt/__init__.py": "X = 1\n"})
    roots = import_roots(root)
    check = asyncio.run(check_imports(root, roots, UNFENCED, python_path_env(probe_env(), roots)))
    assert check is not None
    assert check.found["calc_wt"][0] == str(root.resolve() / "src" / "calc_wt" / "__init__.py")


def test_the_check_refuses_code_found_outside_the_worktree(tmp_path: Path) -> None:
    """Without the roots on PYTHONPATH, the package found is the checkout's."""
    checkout = tree(tmp_path / "checkout", {"src/calc_co/__init__.py": ""})
    root = tree(tmp_path / "wt", {"src/calc_co/__init__.py": ""})
    env = {**probe_env(), "PYTHONPATH": str(checkout / "src")}
    with pytest.raises(GateError) as caught:
        asyncio.run(check_imports(root, import_roots(root), UNFENCED, env, gate="test"))
    message = caught.value.message
    assert message.startswith("gate 'test': Python would import 'calc_co' from ")
    assert str(checkout / "src" / "calc_co" / "__init__.py") in message
    assert "none was run" in message


def test_a_fifo_for_pyproject_is_not_read(tmp_path: Path) -> None:
    root = tree(tmp_path / "wt", {"src/calc/__init__.py": ""})
    os.mkfifo(root / "pyproject.toml")
    assert rel(root, import_roots(root)) == ["src"]


def gate(output: str, exit_code: int = 127, name: str = "lint") -> GateResult:
    return GateResult(name, "cmd", False, False, exit_code, 1.0, False, output, False, 0, "")


@pytest.mark.parametrize(
    ("output", "tool"),
    [
        ("/bin/sh: 1: ruff: not found\n", "ruff"),
        ("bash: line 1: mypy: command not found\n", "mypy"),
        ("sh: golangci-lint: command not found", "golangci-lint"),
        ("/bin/sh: 1: exec: cargo: not found\n", "cargo"),
    ],
)
def test_a_missing_program_is_named(output: str, tool: str) -> None:
    found = missing_tool(gate(output))
    assert found is not None and found.tool == tool and found.gate == "lint"


@pytest.mark.parametrize(
    ("output", "exit_code"),
    [
        ("/bin/sh: 1: ./check.sh: not found\n", 127),  # the change may have removed it
        ("/bin/sh: 1: ruff: not found\n", 1),  # a test that prints it and fails
        ("FAILED tests/test_x.py\n", 127),
    ],
)
def test_other_failures_are_not_a_missing_program(output: str, exit_code: int) -> None:
    assert missing_tool(gate(output, exit_code)) is None
    refuse_missing_tools([gate(output, exit_code)])  # no error


def test_missing_programs_are_one_error_naming_each() -> None:
    results = [gate("/bin/sh: 1: ruff: not found\n"), gate("sh: mypy: not found", name="type")]
    with pytest.raises(GateError) as caught:
        refuse_missing_tools(results)
    message = caught.value.message
    assert "gate 'lint' needs 'ruff'" in message and "gate 'type' needs 'mypy'" in message
    assert caught.value.hint is not None and caught.value.hint.startswith("install ruff")


def test_a_gate_folder_with_a_project_of_its_own_adds_its_roots(tmp_path: Path) -> None:
    """A monorepo: each member has its own pyproject.toml and src/; the gates run in them."""
    root = tree(
        tmp_path / "wt",
        {
            "packages/alpha/pyproject.toml": "[project]\nname = 'alpha'\n",
            "packages/alpha/src/alpha/__init__.py": "",
            "packages/beta/setup.py": "",
            "packages/beta/beta/__init__.py": "",
            "docs/conf.py": "",
        },
    )
    found = gate_import_roots(root, ["packages/alpha", "packages/beta", "docs", "..", "."])
    assert rel(root, found) == [".", "packages/alpha/src", "packages/beta"]
    assert sorted(top_level_names(found)) == ["alpha", "beta"]


def go_worktree(tmp_path: Path, go_mod: str) -> tuple[Path, Path]:
    """A checkout with a go.mod, and a git worktree of it whose go.mod is ``go_mod``."""
    checkout = tree(tmp_path / "checkout", {"go.mod": "module example.com/app\n", "lib/x.go": ""})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(checkout)]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    worktree = checkout / ".semspec" / "run" / "worktrees" / "t1"
    subprocess.run([*git, "worktree", "add", "-q", str(worktree)], check=True, capture_output=True)
    (worktree / "go.mod").write_text(go_mod, encoding="utf-8")
    return checkout, worktree


@pytest.mark.parametrize(
    "directive",
    [
        "replace example.com/lib => {checkout}/lib",
        "replace example.com/lib v1.2.0 => ../../../../lib",
        "replace (\n\texample.com/other => ./other\n\texample.com/lib => {checkout}/lib\n)",
    ],
    ids=["absolute", "relative", "block"],
)
def test_a_go_replace_into_the_checkout_is_refused(tmp_path: Path, directive: str) -> None:
    checkout, worktree = go_worktree(tmp_path, "module example.com/app\n")
    go_mod = "module example.com/app\n\n" + directive.format(checkout=checkout) + "\n"
    (worktree / "go.mod").write_text(go_mod, encoding="utf-8")
    with pytest.raises(GateError) as caught:
        check_go_replaces(worktree, gate="test")
    assert "go.mod replaces example.com/lib with " in caught.value.message
    assert "which is the user's checkout" in caught.value.message


@pytest.mark.parametrize(
    "directive",
    [
        "replace example.com/lib => ./lib",
        "replace example.com/lib => {elsewhere}",
        "replace example.com/lib => example.com/fork v1.0.0",
        "// replace example.com/lib => {checkout}/lib",
    ],
    ids=["inside", "another-repository", "module", "comment"],
)
def test_other_go_replaces_stay(tmp_path: Path, directive: str) -> None:
    elsewhere = tree(tmp_path / "elsewhere", {"go.mod": "module example.com/lib\n"})
    checkout, worktree = go_worktree(tmp_path, "module example.com/app\n")
    go_mod = "module example.com/app\n" + directive.format(checkout=checkout, elsewhere=elsewhere)
    (worktree / "go.mod").write_text(go_mod + "\n", encoding="utf-8")
    check_go_replaces(worktree)
