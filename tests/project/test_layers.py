"""The package floors of ADR 0003: no module imports a floor above its own, and no two packages
import each other, directly or around a loop.

The allowed order is written here once; the ADR explains it. Every import counts, including
imports inside functions (done lazily to keep the CLI fast) and imports only for type checking:
each is a dependency all the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "semspec"

# Lowest first. A package may import its own modules and any package on a lower floor; packages
# on one floor never import each other. "semspec" is the package root (its version only).
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"semspec", "semspec.core"}),
    frozenset({"semspec.vocabulary"}),
    frozenset({"semspec.graph", "semspec.model"}),
    frozenset({"semspec.knowledge"}),
    frozenset({"semspec.agents", "semspec.processors"}),
    frozenset({"semspec.workflow"}),
    frozenset({"semspec.services"}),
    frozenset({"semspec.client"}),
    frozenset({"semspec.console"}),
    frozenset({"semspec.demo"}),
    frozenset({"semspec.cli"}),
    frozenset({"semspec.__main__"}),
)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(root: Path, path: Path) -> Iterator[tuple[str, int]]:
    """Absolute names of the modules ``path`` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(root, path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module, node.lineno
            for alias in node.names:  # "from semspec import core" imports a package too
                yield f"{module}.{alias.name}", node.lineno


def package_of(module: str, depth: int = 2) -> str:
    """The package a module belongs to: ``semspec.<name>`` (or a deeper level with ``depth``)."""
    return ".".join(module.split(".")[:depth])


def _floor(package: str) -> int:
    for index, floor in enumerate(FLOORS):
        if package in floor:
            return index
    raise AssertionError(f"{package} is on no floor: add it to FLOORS and to ADR 0003")


def _existing_module(root: Path, dotted: str) -> str:
    """The longest prefix of ``dotted`` that is a module or package under ``root``: in
    ``from semspec.core import errors`` the module is ``semspec.core.errors``, in
    ``from semspec.core.errors import SemspecError`` it is ``semspec.core.errors``."""
    parts = dotted.split(".")
    while len(parts) > 1:
        path = root.parent.joinpath(*parts)
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            break
        parts.pop()
    return ".".join(parts)


def import_edges(root: Path, depth: int = 2) -> dict[tuple[str, str], list[str]]:
    """Package → package edges of the tree under ``root``, with where each is made."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        source = _module_name(root, path)
        for name, line in _imports(root, path):
            if name != root.name and not name.startswith(root.name + "."):
                continue
            target = _existing_module(root, name)
            here, there = package_of(source, depth), package_of(target, depth)
            where = f"{path.relative_to(root.parent)}:{line} imports {target}"
            if here != there and where not in edges.get((here, there), []):
                edges.setdefault((here, there), []).append(where)
    return edges


def wrong_way_imports(root: Path) -> list[str]:
    """Every import that goes up a floor or across one."""
    found = []
    for (here, there), places in import_edges(root).items():
        if there == "semspec" and here != "semspec":
            continue  # the root holds only the version; every floor may read it
        if _floor(there) >= _floor(here):
            found += [f"floor {_floor(here)} → {_floor(there)}: {place}" for place in places]
    return found


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected groups of more than one package (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


@pytest.mark.slow  # parses every module of semspec
def test_no_module_imports_a_floor_above_its_own() -> None:
    assert wrong_way_imports(SOURCE) == []


@pytest.mark.slow  # parses every module of semspec
def test_no_packages_import_each_other_in_a_loop() -> None:
    # One level down too: semspec.workflow.task and semspec.workflow.context must not need each
    # other, or the pair is one package in two folders.
    for depth in (2, 3):
        loops = cycles(set(import_edges(SOURCE, depth)))
        assert loops == [], f"import loops at depth {depth}: {loops}"


def test_every_package_is_on_a_floor() -> None:
    packages = {package_of(_module_name(SOURCE, p)) for p in SOURCE.rglob("*.py")}
    for package in packages:
        _floor(package)


def test_every_folder_of_modules_is_a_regular_package() -> None:
    # A folder without __init__.py is a namespace package: it imports, but tools and readers
    # treat it differently, and another distribution could add modules to it.
    folders = {p.parent for p in SOURCE.rglob("*.py")}
    assert sorted(str(f) for f in folders if not (f / "__init__.py").is_file()) == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "semspec"
    for package in ("core", "vocabulary", "workflow", "cli"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("__version__ = '0'\n")
    (root / "cli" / "app.py").write_text(
        "from semspec.workflow import x\nfrom semspec import core\n"
    )
    (root / "workflow" / "loop.py").write_text("def f():\n    from ..vocabulary import names\n")
    return root


def test_the_checker_finds_an_import_that_goes_up(tree: Path) -> None:
    assert wrong_way_imports(tree) == []
    (tree / "core" / "errors.py").write_text("def f():\n    from semspec.cli.app import main\n")
    (found,) = wrong_way_imports(tree)
    assert "semspec/core/errors.py:2 imports semspec.cli.app" in found


def test_the_checker_finds_a_relative_import_across_a_floor(tree: Path) -> None:
    (tree / "vocabulary" / "events.py").write_text("from ..workflow import loop\n")
    found = wrong_way_imports(tree)
    assert found and all("semspec/vocabulary/events.py:1 imports" in f for f in found)


def test_the_checker_finds_a_loop_between_subpackages(tree: Path) -> None:
    for name, other in (("task", "context"), ("context", "task")):
        (tree / "workflow" / name).mkdir()
        (tree / "workflow" / name / "__init__.py").write_text(
            f"from semspec.workflow.{other} import a\n"
        )
    assert cycles(set(import_edges(tree, 3))) == [
        ["semspec.workflow.context", "semspec.workflow.task"]
    ]
