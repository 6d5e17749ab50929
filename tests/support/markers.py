"""The suite's heavy markers, read from what a test reaches, so nobody has to remember them.

``stack``: the test, or a fixture in its closure, reaches a real server: NATS (one node or a
cluster), Temporal's dev or time-skipping server, ``oxigraph serve``, ``semspec up``, a monitor
process, Phoenix. ``browser``: it reaches chromium through Playwright. Both are found by walking
code: the names a function's code uses (its own and its nested functions', lambdas' and
comprehensions'), following every function or class of ``tests.…`` those names resolve to, so a
test that starts a server through a helper of ``tests/support/`` is found as one that uses a
fixture is. ``slow`` (real agent CLIs, large corpora, long gates) has no such mark to read: the
tests that earn it say so with ``pytest.mark.slow``.

The inner loop is what none of the three marks: ``pytest -m "not stack and not browser and not
slow"`` (README, "Tests and benchmarks").
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

STACK_NAMES = frozenset(
    {
        "NatsServer",
        "NatsCluster",
        "OxigraphServer",
        "start_local",
        "start_time_skipping",
        "running_stack",
        "monitor_process",
        "running_phoenix",
    }
)
"""Names whose use starts a server: the helpers of ``tests/support/`` and Temporal's
``WorkflowEnvironment`` starters."""

BROWSER_NAMES = frozenset({"chromium", "require_chromium", "async_playwright"})
"""Names whose use launches a browser (``tests/support/browser.py``, Playwright)."""


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    """``code`` and every code object nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions_of(obj: Any) -> list[Callable[..., Any]]:
    """The plain functions behind ``obj``: itself, or a class's methods (its own, not inherited)."""
    if inspect.isclass(obj):
        found = []
        for member in vars(obj).values():
            inner = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(inner, property):
                found += [f for f in (inner.fget, inner.fset) if f is not None]
            elif inspect.isfunction(inner):
                found.append(inner)
        return found
    if inspect.ismethod(obj):
        obj = obj.__func__
    obj = inspect.unwrap(obj) if callable(obj) else obj
    return [obj] if inspect.isfunction(obj) else []


def _defined_under(obj: Any, root: Path) -> bool:
    """Whether ``obj`` is defined in a file under ``root`` (the suite, whose code is followed)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return path is not None and Path(path).is_relative_to(root)


class Reach:
    """Which marker names each function reaches; remembered per function across the session."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._seen: dict[Callable[..., Any], frozenset[str]] = {}

    def of(self, func: Callable[..., Any]) -> frozenset[str]:
        """The markers (``stack``, ``browser``) that calling ``func`` may earn."""
        found = self._seen.get(func)
        if found is not None:
            return found
        self._seen[func] = frozenset()  # a cycle of helpers ends here
        marks: set[str] = set()
        scope = getattr(func, "__globals__", {})
        for code in _codes(func.__code__):
            for name in code.co_names:
                if name in STACK_NAMES:
                    marks.add("stack")
                if name in BROWSER_NAMES:
                    marks.add("browser")
                target = scope.get(name)
                if target is not None and _defined_under(target, self._root):
                    for inner in _functions_of(target):
                        marks |= self.of(inner)
        self._seen[func] = frozenset(marks)
        return self._seen[func]

    def of_all(self, funcs: Iterable[Callable[..., Any]]) -> frozenset[str]:
        """The union of ``of`` over ``funcs`` (a test and the fixtures it uses)."""
        marks: set[str] = set()
        for func in funcs:
            for inner in _functions_of(func):
                marks |= self.of(inner)
        return frozenset(marks)
