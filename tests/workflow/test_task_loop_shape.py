"""The task loop's shape (issue 27): one writer of the status per concern, no exception used as a
message, and small modules in ``semspec/workflow/task/``.

Read from the source with ``ast``: a helper that writes ``status.<field>`` outside the owners,
or a new exception class in the loop, fails here before it spreads.
"""

from __future__ import annotations

import ast
from pathlib import Path

TASK = Path(__file__).resolve().parents[2] / "semspec" / "workflow" / "task"
STATUS_OWNERS = {
    "loop/state.py": "the task's progress (TaskState)",
    "loop/escalations.py": "the pending question and its answer",
    "loop/outbox.py": "loop events waiting for NATS",
    "loop/carry.py": "what a checkpoint carries into the next run",
}
MUTATORS = {"append", "extend", "merge", "add", "update", "clear", "pop", "remove", "insert"}
MAX_LINES = 500
ALLOWED_EXCEPTIONS = {"UnsignedAnswer"}
"""Raised by the update validator to refuse an answer: Temporal's way to reject an update."""


def _is_status(node: ast.expr) -> bool:
    """``status``, ``self.status`` or ``self._status``."""
    if isinstance(node, ast.Name):
        return node.id == "status"
    return (
        isinstance(node, ast.Attribute)
        and node.attr in ("status", "_status")
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def status_writes(path: Path) -> list[int]:
    """Lines of ``path`` that assign a status field or change one in place."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(item, ast.Attribute) and _is_status(item.value):
                    lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            held = node.func.value
            mutated = isinstance(held, ast.Attribute) and _is_status(held.value)
            if node.func.attr in MUTATORS and mutated:
                lines.append(node.lineno)
    return lines


def exception_classes(path: Path) -> list[str]:
    """Classes of ``path`` that derive from an exception."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            if any(b.endswith(("Exception", "Error")) for b in bases):
                found.append(node.name)
    return found


def _modules(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*.py"))}


def test_only_the_owner_of_each_concern_writes_the_task_status() -> None:
    writers = {name: status_writes(path) for name, path in _modules(TASK).items()}
    strays = {name: lines for name, lines in writers.items() if lines and name not in STATUS_OWNERS}
    assert strays == {}, "change TaskStatus through TaskState (loop/state.py)"


def test_the_loop_uses_no_exception_as_a_message() -> None:
    loop = [TASK / "workflows.py", *sorted((TASK / "loop").glob("*.py"))]
    found = {p.name: exception_classes(p) for p in loop}
    assert {n: c for n, c in found.items() if set(c) - ALLOWED_EXCEPTIONS} == {}


def test_no_module_of_the_task_loop_is_over_the_limit() -> None:
    sizes = {
        name: len(p.read_text(encoding="utf-8").splitlines()) for name, p in _modules(TASK).items()
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_checker_finds_a_status_write_and_an_exception(tmp_path: Path) -> None:
    module = tmp_path / "steps.py"
    module.write_text(
        "class _Resolved(Exception):\n    pass\n\n"
        "def f(self, status):\n    status.phase = 'x'\n    self._status.log.append(1)\n"
    )
    assert status_writes(module) == [5, 6]
    assert exception_classes(module) == ["_Resolved"]
