"""Which Python code a gate imports: the worktree's, never the user's own checkout (issue 29).

A project installed in the environment the worker runs in (``pip install -e .``, the usual
setup) makes ``import pkg`` find the user's checkout through a ``.pth`` path or an editable
finder; a ``src/`` layout is not on ``sys.path`` by itself, so a gate's ``pytest`` in the
worktree would test the checkout, and a change that breaks the code would pass. Two things
prevent it:

- ``import_roots`` finds the folders of the worktree that hold its top-level packages (what
  ``pyproject.toml`` or ``setup.cfg`` declare, else ``src/`` when it holds packages, else the
  root), and ``python_path_env`` puts them first on ``PYTHONPATH`` for every gate;
- ``check_imports`` runs, before the first gate, the gate's ``python`` with the gate's own
  environment and fence and asks where each top-level package would come from
  (``importlib.util.find_spec``: nothing of the project is run). A package found outside the
  worktree (an install hook that puts itself ahead of ``sys.path``, a module a ``.pth`` file
  already imported) is a ``GateError`` naming it and where it came from: no gate runs.

``docs/configuration.md`` (Gates) says what a user sees.
"""

from __future__ import annotations

import asyncio
import configparser
import json
import os
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semspec.agents.tools.files import read_regular
from semspec.agents.workspace import ToolError
from semspec.core.errors import GateError
from semspec.core.logging import get_logger
from semspec.core.sandbox import SHELL, Fence, Sandbox
from semspec.workflow.gates.process_group import end_group

PROBE_TIMEOUT_S = 30.0
MAX_NAMES = 40
"""Top-level names probed at most (a repository with more folders is probed on the first)."""
_MAX_PROBE_OUTPUT = 256 * 1024
_MAX_CONFIG_BYTES = 1_000_000
_MARK = "semspec-imports "
_NOT_PACKAGES = frozenset(
    {
        "tests",
        "test",
        "testing",
        "docs",
        "doc",
        "examples",
        "example",
        "scripts",
        "tools",
        "bench",
        "benchmarks",
        "build",
        "dist",
        "site-packages",
        "node_modules",
        "venv",
        "env",
        "setup",
        "conftest",
        "noxfile",
        "tasks",
        "fabfile",
    }
)
"""Folder and module names at an import root that are not the project's importable code."""

# The gate's own interpreter: ``python`` as its PATH finds it, else ``python3``. The probe
# script and the names are arguments, never part of the shell text.
_FIND_PYTHON = 'p=python; command -v python >/dev/null 2>&1 || p=python3; exec "$p" -c "$@" 2>&1'
# ``python -c`` puts the working folder first on sys.path; a tool's own script (``pytest``,
# ``mypy``) does not, so the probe leaves it out: what it finds, every gate finds.
_PROBE = """
import importlib.util, json, sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
found = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception as exc:
        found[name] = {"error": (type(exc).__name__ + ": " + str(exc))[:300]}
        continue
    if spec is None:
        found[name] = {}
        continue
    where = list(spec.submodule_search_locations or [])
    if spec.has_location and spec.origin:
        where.insert(0, spec.origin)
    found[name] = {"from": where}
print("semspec-imports " + json.dumps({"python": sys.executable, "found": found}))
"""

logger = get_logger("gates.imports")


def import_roots(worktree: Path) -> list[Path]:
    """The worktree's folders that hold its top-level Python packages, most specific first.

    What the packaging config declares (setuptools, hatch, poetry, pdm; ``setup.cfg``), else
    ``src/`` when it holds a package or module, else the root. Only folders inside the
    worktree that exist count.
    """
    root = Path(os.path.realpath(worktree))
    declared = [*_pyproject_roots(root / "pyproject.toml"), *_setup_cfg_roots(root / "setup.cfg")]
    roots = [p for p in (_inside(root, rel) for rel in declared) if p is not None]
    if not roots and _holds_python(root / "src"):
        roots = [root / "src"]
    if not roots:
        roots = [root]
    return list(dict.fromkeys(roots))


def gate_import_roots(worktree: Path, working_dirs: Iterable[str] = ()) -> list[Path]:
    """``import_roots`` of the worktree, then of each folder in ``working_dirs`` that holds a
    project of its own (``pyproject.toml``, ``setup.cfg`` or ``setup.py``)."""
    root = Path(os.path.realpath(worktree))
    roots = import_roots(root)
    for working_dir in dict.fromkeys(working_dirs):
        folder = _inside(root, working_dir)
        if folder is None or folder == root:
            continue
        if any((folder / name).is_file() for name in ("pyproject.toml", "setup.cfg", "setup.py")):
            roots += import_roots(folder)
    return list(dict.fromkeys(roots))


def python_path_env(env: Mapping[str, str], roots: Iterable[str | Path]) -> dict[str, str]:
    """``env`` with ``roots`` first on ``PYTHONPATH`` (before one ``gates.env`` passed on)."""
    first = [str(p) for p in roots]
    if not first:
        return dict(env)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**env, "PYTHONPATH": os.pathsep.join([*first, *rest])}


def top_level_names(roots: Iterable[Path]) -> list[str]:
    """The importable names the worktree's code provides at ``roots``: packages (with or
    without ``__init__.py``) and modules; a namespace package's children by their dotted
    name, since only they tell which folder the code comes from."""
    names: list[str] = []
    for root in roots:
        for entry in _listing(root):
            name = entry.name.removesuffix(".py")
            if not _wanted(name):
                continue
            folder = Path(entry.path)
            is_module = entry.is_file() and entry.name.endswith(".py")
            if is_module or (entry.is_dir() and (folder / "__init__.py").is_file()):
                names.append(name)
            elif entry.is_dir() and _holds_python(folder):
                children = [c.name.removesuffix(".py") for c in _listing(folder)]
                kept = [c for c in children if c.isidentifier() and c != "__pycache__"]
                names += [f"{name}.{child}" for child in kept if _holds_python_named(folder, child)]
    return list(dict.fromkeys(names))[:MAX_NAMES]


@dataclass(frozen=True)
class ImportCheck:
    """Where the gate's Python found each of the worktree's top-level names."""

    python: str
    found: dict[str, list[str]]
    """Name → the file or folders it would be imported from (empty: not importable)."""


async def python_import_path(
    worktree: Path,
    sandbox: Sandbox,
    env: Mapping[str, str],
    hidden: tuple[Path, ...] = (),
    gate: str = "gates",
    working_dirs: Iterable[str] = (),
) -> tuple[str, ...]:
    """The folders to put first on the gates' ``PYTHONPATH`` (none when the worktree holds no
    Python package), checked with ``check_imports``; ``GateError`` when the gates would import
    code from outside the worktree all the same. ``working_dirs`` are the gates' own folders:
    one that is a Python project of its own (a monorepo's member) adds its roots."""
    roots = await asyncio.to_thread(gate_import_roots, worktree, tuple(working_dirs))
    if not await asyncio.to_thread(top_level_names, roots):
        return ()
    await check_imports(worktree, roots, sandbox, python_path_env(env, roots), hidden, gate)
    return tuple(str(root) for root in roots)


async def check_imports(
    worktree: Path,
    roots: list[Path],
    sandbox: Sandbox,
    env: Mapping[str, str],
    hidden: tuple[Path, ...] = (),
    gate: str = "gates",
) -> ImportCheck | None:
    """Ask the gate's Python where the worktree's packages would come from; ``GateError`` when
    one would come from outside the worktree. None when there is nothing to ask (no Python
    package, no Python on the gate's PATH, or the probe did not answer)."""
    names = await asyncio.to_thread(top_level_names, roots)
    if not names:
        return None
    fence = Fence(worktree, hidden, network=False)
    argv = sandbox.argv(
        [SHELL, "-c", _FIND_PYTHON, "semspec-probe", _PROBE, *names], fence, worktree
    )
    answer = await _run_probe(argv, env, worktree)
    if answer is None:
        return None
    check = ImportCheck(str(answer.get("python", "")), _found(answer.get("found")))
    logger.info("gate imports", python=check.python, found=check.found)
    await _refuse_outside(check, worktree, gate)
    return check


async def _refuse_outside(check: ImportCheck, worktree: Path, gate: str) -> None:
    root = os.path.realpath(worktree)
    for name, places in check.found.items():
        if not places:
            continue
        real = os.path.realpath(places[0])
        if real == root or real.startswith(root + os.sep):
            continue
        checkout = await asyncio.to_thread(checkout_of, worktree)
        whose = (
            " (the user's checkout)"
            if checkout and (real + os.sep).startswith(checkout + os.sep)
            else ""
        )
        raise GateError(
            f"Python would import {name!r} from {places[0]}{whose}, not from the worktree "
            f"{root}: the gates would test other code than the change, so none was run "
            f"(python: {check.python})",
            gate=gate,
            hint="something in the environment the worker runs in puts that code ahead of "
            "PYTHONPATH (an install hook or a .pth file that imports it): install the project "
            "without it (pip install -e . with a plain src/ folder adds only a path), or run "
            "the stack from an environment where the project is not installed",
        )


async def _run_probe(argv: list[str], env: Mapping[str, str], cwd: Path) -> dict[str, Any] | None:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        logger.warning("gate import check not started", error=str(exc))
        return None
    assert process.stdout is not None  # stdout=PIPE above
    try:
        output = await asyncio.wait_for(process.stdout.read(_MAX_PROBE_OUTPUT), PROBE_TIMEOUT_S)
    except TimeoutError:
        output = b""
    finally:
        await end_group(process.pid)
        await process.wait()
    text = output.decode("utf-8", "replace")
    for line in reversed(text.splitlines()):
        if line.startswith(_MARK):
            try:
                answer = json.loads(line[len(_MARK) :])
            except ValueError:
                break
            return answer if isinstance(answer, dict) else None
    # No Python on the gate's PATH (its own gates will say so), or one that could not start.
    logger.info("gate import check had no answer", exit_code=process.returncode, output=text[-300:])
    return None


def _found(raw: Any) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if not isinstance(raw, dict):
        return found
    for name, entry in raw.items():
        places = entry.get("from") if isinstance(entry, dict) else None
        found[str(name)] = [str(p) for p in places] if isinstance(places, list) else []
    return found


def checkout_of(worktree: Path) -> str | None:
    """The repository the worktree belongs to, from its ``.git`` file (``gitdir: R/.git/...``)."""
    text = _read_text(worktree / ".git")
    if text is None:
        return None
    gitdir = text.removeprefix("gitdir:").strip()
    marker = f"{os.sep}.git{os.sep}"
    if marker not in gitdir:
        return None
    return os.path.realpath(gitdir.split(marker, 1)[0])


def _pyproject_roots(path: Path) -> list[str]:
    """Folders (relative) that hold packages according to ``pyproject.toml``."""
    text = _read_text(path)
    try:
        data = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return []
    tool = _table(data, "tool")
    found: list[str] = []
    setuptools = _table(tool, "setuptools")
    package_dir = _table(setuptools, "package-dir")
    if isinstance(package_dir.get(""), str):
        found.append(package_dir[""])
    for name, folder in package_dir.items():
        # {"pkg": "lib/pkg"} puts lib/ on the path; a renamed folder cannot be reached this way.
        if name and isinstance(folder, str) and Path(folder).name == name:
            found.append(str(Path(folder).parent))
    where = _table(_table(setuptools, "packages"), "find").get("where")
    found += [w for w in _strings(where)]
    wheel = _table(_table(_table(_table(tool, "hatch"), "build"), "targets"), "wheel")
    found += [str(Path(p).parent) for p in _strings(wheel.get("packages"))]
    sources = wheel.get("sources")
    if isinstance(sources, dict):
        found += [src for src, dest in sources.items() if dest == "" and isinstance(src, str)]
    else:
        found += _strings(sources)
    for item in _table(tool, "poetry").get("packages") or []:
        if isinstance(item, dict) and isinstance(item.get("from"), str):
            found.append(item["from"])
    pdm_dir = _table(_table(tool, "pdm"), "build").get("package-dir")
    if isinstance(pdm_dir, str):
        found.append(pdm_dir)
    return found


def _setup_cfg_roots(path: Path) -> list[str]:
    """Folders (relative) that hold packages according to ``setup.cfg``."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read_text(path) or "")
    except configparser.Error:
        return []
    found: list[str] = []
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        key, _, folder = line.partition("=")
        if not key.strip() and folder.strip():
            found.append(folder.strip())
    where = parser.get("options.packages.find", "where", fallback="").strip()
    if where:
        found.append(where)
    return found


def _read_text(path: Path) -> str | None:
    """The text of the regular file at ``path`` (the worktree's: agent-written, so never a FIFO
    or a device, and bounded), or None."""
    try:
        return read_regular(path, str(path), _MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except ToolError:
        return None


def _table(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` when it is a folder inside ``root`` (``.`` is the root itself)."""
    target = Path(os.path.realpath(root / rel))
    if target != root and root not in target.parents:
        return None
    return target if target.is_dir() else None


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)[:1000]
    except OSError:
        return []


def _wanted(name: str) -> bool:
    return (
        name.isidentifier()
        and not name.startswith("_")
        and name not in _NOT_PACKAGES
        and name not in sys.stdlib_module_names
    )


def _holds_python(folder: Path) -> bool:
    """Whether ``folder`` holds a Python module or package directly or one level down."""
    for entry in _listing(folder):
        if entry.is_file() and entry.name.endswith(".py"):
            return True
        if entry.is_dir() and (Path(entry.path) / "__init__.py").is_file():
            return True
    return False


def _holds_python_named(folder: Path, child: str) -> bool:
    return (folder / f"{child}.py").is_file() or (folder / child / "__init__.py").is_file()
