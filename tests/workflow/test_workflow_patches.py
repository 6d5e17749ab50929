"""ADR 0007: every ``workflow.patched`` id is listed with the minor version that added it, and
only patches of the current minor version are in force."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from semspec.workflow.patches import PATCHES

ROOT = Path(__file__).resolve().parents[2]
PATCH_CALLS = ("patched", "deprecate_patch")


def _is_patch_call(node: ast.AST) -> bool:
    """``workflow.patched(...)``, or ``patched(...)`` imported by name."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in PATCH_CALLS
    return isinstance(func, ast.Name) and func.id in PATCH_CALLS


def _patched_ids(source: Path) -> dict[str, str]:
    """``workflow.patched("id")`` calls under ``source``: id → where."""
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = {
            target.id: node.value.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not _is_patch_call(node):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                patch = arg.value
            elif isinstance(arg, ast.Name) and arg.id in constants:
                patch = constants[arg.id]
            else:
                patch = f"<not a literal at {path.name}:{node.lineno}>"
            found[patch] = f"{path.relative_to(source.parent)}:{node.lineno}"
    return found


def _minor() -> str:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    major, minor, *_ = str(version["project"]["version"]).split(".")
    return f"{major}.{minor}"


def test_every_patch_in_the_code_is_in_the_table() -> None:
    unlisted = {p: where for p, where in _patched_ids(ROOT / "semspec").items() if p not in PATCHES}
    assert unlisted == {}, "add each id to semspec/workflow/patches.py (ADR 0007)"


def test_only_patches_of_the_current_minor_version_are_in_force() -> None:
    minor = _minor()
    old = {p: v for p, v in PATCHES.items() if v != minor}
    assert old == {}, f"remove these patches and their old paths at {minor} (ADR 0007)"


def test_the_checker_finds_a_patch_named_by_a_constant(tmp_path: Path) -> None:
    (tmp_path / "wf.py").write_text(
        'P = "some-change"\n\ndef f(workflow):\n    return workflow.patched(P)\n'
    )
    assert list(_patched_ids(tmp_path)) == ["some-change"]


def test_the_checker_finds_a_patch_called_by_its_imported_name(tmp_path: Path) -> None:
    (tmp_path / "wf.py").write_text(
        'from temporalio.workflow import patched\n\ndef f():\n    return patched("other")\n'
    )
    assert list(_patched_ids(tmp_path)) == ["other"]
