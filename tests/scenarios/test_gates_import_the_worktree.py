"""Scenario: gates test the worktree's code, not the user's checkout installed in the
environment the stack runs in (issue 29, item 1).

The stack is started, as the README advises, from the project's own virtual environment: a
fresh venv (this interpreter's packages reachable through a ``.pth`` line, for pytest and
setuptools) whose ``bin`` is the only Python folder on PATH, so ``ruff`` is not there. Each
project is installed into it in editable mode (``pip install -e .``, offline), then a task's
scripted developer breaks ``add`` (``return a - b``) and the reviewer would approve anything:

- a ``src/`` layout, its test gate the python preset's ``python -m pytest -q``;
- a flat layout, its test gate ``pytest -q`` (the console script: ``python -m`` would put the
  worktree on sys.path by itself);

each under ``/tmp`` (which the fence replaces with a private one) and under a home-like
folder elsewhere, fenced by bubblewrap and not. The test gate must fail. Before the fix the
gate imported the checkout (the editable install's path), passed, and the change was approved
and committed; fenced under /tmp it found no package at all.

A project whose preset's lint gate needs ``ruff``: the task fails once, with a configuration
error naming the gate and the program, instead of a warning in every iteration.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from semspec.core.sandbox import sandbox_for
from tests.support.scenario_tasks import APPROVE, EXIT_ESCALATED, entries, new_id, submit
from tests.support.stack import (
    Stack,
    check_gate,
    cli_env,
    make_sample_repo,
    running_stack,
    sample_config,
)

PLACES = ["tmp", "home"]
TEST_FILE = "from {pkg} import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
GOOD_ADD = "def add(a, b):\n    return a + b\n"
BROKEN_ADD = "def add(a, b):\n    return a - b\n"

needs_bwrap = pytest.mark.skipif(
    sandbox_for("bwrap").bwrap is None, reason="bubblewrap does not work here"
)


def make_venv(path: Path) -> Path:
    """A virtual environment without pip of its own; this interpreter's packages (pytest,
    setuptools, pip) are reachable through one ``.pth`` line and pytest has its script, as in
    a user's venv; ruff is not there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "semspec_test_tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # The console script pip would have made for pytest in this venv: ours, with its python.
    ours = (Path(sys.executable).parent / "pytest").read_text(encoding="utf-8")
    script = path / "bin" / "pytest"
    script.write_text(f"#!{python}\n" + ours.split("\n", 1)[1], encoding="utf-8")
    script.chmod(0o755)
    return path


def pip_install_editable(venv: Path, project: Path) -> None:
    """``pip install -e project`` into ``venv``, offline (no build isolation, no index)."""
    argv = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-build-isolation"]
    argv += ["--no-deps", "--no-index", "--disable-pip-version-check", "-e", str(project)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("project-venv") / "venv")


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    """A home-like folder outside /tmp (the fence keeps it visible, read-only)."""
    path = Path(tempfile.mkdtemp(prefix="semspec-home-", dir="/var/tmp"))
    yield path / "home" / "dev"
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, venv: Path) -> Iterator[Stack]:
    """The stack as `semspec up` started from the project's activated venv."""
    env = cli_env()
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    env["VIRTUAL_ENV"] = str(venv)
    root = tmp_path_factory.mktemp("venv-stack")
    with running_stack(root, sample_config([check_gate()]), env=env) as running:
        yield running


def project_files(layout: str, pkg: str) -> dict[str, str]:
    code = f"src/{pkg}/__init__.py" if layout == "src" else f"{pkg}/__init__.py"
    pyproject = (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{pkg}"\nversion = "0.1"\n'
    )
    if layout == "flat":
        pyproject += f'[tool.setuptools]\npackages = ["{pkg}"]\n'
    return {
        "pyproject.toml": pyproject,
        code: GOOD_ADD,
        "tests/test_add.py": TEST_FILE.format(pkg=pkg),
        ".gitignore": "__pycache__/\n.pytest_cache/\n*.egg-info/\nbuild/\n",
    }


def make_project(
    stack: Stack, venv: Path, folder: Path, gates: dict[str, Any], files: dict[str, str]
) -> Path:
    """A repository at ``folder / repo`` served by ``stack``, installed editable in ``venv``."""
    config = sample_config([], loop={"max_retries": 0})
    config["gates"] = gates
    config["services"] = {
        "nats": stack.nats_section(),
        "temporal": {"address": stack.temporal_address()},
        "run_dir": str(folder / "run"),
    }
    config["security"] = {"owner_key": str(stack.owner_key_path)}
    repo = make_sample_repo(folder / "repo", config, files)
    pip_install_editable(venv, repo)
    return repo


def parent_of(place: str, stack: Stack, home: Path) -> Path:
    return stack.root / "projects" if place == "tmp" else home


BWRAP = pytest.param("bwrap", marks=needs_bwrap)


def case(layout: str, place: str, fence: str) -> Any:
    marks = [needs_bwrap] if fence == "bwrap" else []
    return pytest.param(layout, place, fence, marks=marks, id=f"{layout}-{place}-{fence}")


# Every src/ case; the flat layout once per place and once per fence.
CASES = [case("src", place, fence) for place in PLACES for fence in ("bwrap", "none")]
CASES += [case("flat", "tmp", "bwrap"), case("flat", "home", "none")]


@pytest.mark.parametrize(("layout", "place", "fence"), CASES)
def test_a_change_that_breaks_add_fails_the_test_gate(
    stack: Stack, venv: Path, home: Path, layout: str, place: str, fence: str
) -> None:
    pkg = f"arith_{layout}_{place}_{fence}"
    overrides: dict[str, Any] = {"lint": {"enabled": False}}
    if layout == "flat":
        overrides["test"] = {"command": "pytest -q -p no:cacheprovider"}
    gates = {"preset": "python", "sandbox": fence, "overrides": overrides}
    folder = parent_of(place, stack, home) / pkg
    repo = make_project(stack, venv, folder, gates, project_files(layout, pkg))
    # The checkout itself is what the venv imports (the editable install's point).
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {pkg}; print({pkg}.__file__)"],
        capture_output=True, text=True, cwd="/", check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(repo)), where
    code_file = f"src/{pkg}/__init__.py" if layout == "src" else f"{pkg}/__init__.py"
    task_id = new_id(f"break-add-{layout}-{place}-{fence}")
    iterations = [{"developer": {"write": {code_file: BROKEN_ADD}}, "reviewer": APPROVE}]
    code, status = submit(stack, repo, task_id, [code_file], iterations, criterion="add adds")
    try:
        assert status["commit_id"] is None, "the broken change was committed"
        assert code == EXIT_ESCALATED, (status["outcome"], status["reason"])
        assert status["pending_escalation"]["reason"] == "budget_exhausted"
        (test_gate,) = [g for g in status["last_gates"] if g["name"] == "test"]
        assert not test_gate["passed"], test_gate["output"]
        assert "assert -1 == 5" in test_gate["output"], test_gate["output"]
        assert "ModuleNotFoundError" not in test_gate["output"]
    finally:
        stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=repo)


@pytest.mark.parametrize("fence", [BWRAP, "none"])
def test_a_missing_gate_program_is_one_configuration_error(
    stack: Stack, venv: Path, fence: str
) -> None:
    pkg = f"arith_noruff_{fence}"
    # The python preset as it ships: its optional lint gate runs `ruff check .`.
    gates = {"preset": "python", "sandbox": fence}
    folder = stack.root / "projects" / pkg
    repo = make_project(stack, venv, folder, gates, project_files("src", pkg))
    code_file = f"src/{pkg}/__init__.py"
    task_id = new_id(f"no-ruff-{fence}")
    fixed = GOOD_ADD + "\n\ndef sub(a, b):\n    return a - b\n"
    iterations = [{"developer": {"write": {code_file: fixed}}, "reviewer": APPROVE}]
    code, status = submit(stack, repo, task_id, [code_file], iterations, criterion="sub")
    assert code != 0, status
    assert status["outcome"] == "failed", status
    reason = status["reason"]
    assert "gate 'lint': program not found where gates run" in reason, reason
    assert "needs 'ruff'" in reason and "ruff: not found" in reason, reason
    assert "install ruff in the environment `semspec up` runs in" in reason, reason
    # Once: no second iteration, no reviewer, no commit.
    assert status["iteration"] == 1 and status["commit_id"] is None, status
    assert entries(status, "review") == []
    shown = stack.cli("task", "status", task_id, repo=repo)
    assert "program not found where gates run" in shown.stdout, shown.stdout


FRONT_FINDER = '''
import importlib.util, sys


class CheckoutFirst:
    """An install hook that puts the checkout's package ahead of sys.path."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != {pkg!r}:
            return None
        return importlib.util.spec_from_file_location(
            name, {init!r}, submodule_search_locations=[{folder!r}]
        )


sys.meta_path.insert(0, CheckoutFirst)
'''


def test_a_gate_that_would_import_the_checkout_is_refused(stack: Stack, venv: Path) -> None:
    """PYTHONPATH cannot beat a finder placed first on sys.meta_path: the check before the
    first gate sees where the package would come from and runs no gate."""
    pkg = "arith_hooked"
    gates = {"preset": "python", "sandbox": "none", "overrides": {"lint": {"enabled": False}}}
    repo = make_project(
        stack, venv, stack.root / "projects" / pkg, gates, project_files("src", pkg)
    )
    folder = repo / "src" / pkg
    site = next((venv / "lib").glob("python3*/site-packages"))
    hook = FRONT_FINDER.format(pkg=pkg, init=str(folder / "__init__.py"), folder=str(folder))
    (site / "checkout_first.py").write_text(hook, encoding="utf-8")
    (site / "checkout_first.pth").write_text("import checkout_first\n", encoding="utf-8")
    try:
        code_file = f"src/{pkg}/__init__.py"
        task_id = new_id("checkout-first")
        iterations = [{"developer": {"write": {code_file: BROKEN_ADD}}, "reviewer": APPROVE}]
        code, status = submit(stack, repo, task_id, [code_file], iterations, criterion="add")
    finally:
        (site / "checkout_first.pth").unlink()
    assert code != 0 and status["outcome"] == "failed", (status["outcome"], status["reason"])
    reason = status["reason"]
    shown = f"would import {pkg!r} from {folder / '__init__.py'} (the user's checkout)"
    assert shown in reason, reason
    assert "none was run" in reason and status["commit_id"] is None
    assert status["last_gates"] == []
