"""The suite's heavy markers, read from what a test reaches, so nobody has to remember them.

- ``stack``: the test, or a fixture in its closure, starts or uses a real server: NATS (one node
  or a cluster), Temporal's dev or time-skipping server, ``oxigraph serve``, the services'
  ``Supervisor``, ``semspec up`` or ``semspec demo`` run as a process, a monitor process, Phoenix.
- ``browser``: it launches chromium through Playwright.
- ``slow``: neither, but it starts a process of its own (the CLI as a subprocess, a Python child):
  an interpreter and semspec's imports cost about half a second each time. Tests that are heavy
  in process (large corpora, many generated examples, gates that run pytest) carry
  ``pytest.mark.slow`` by hand.

All three are found by walking code: the names a function's code uses (its own and its nested
functions', lambdas' and comprehensions'), following every function or class defined under
``tests/`` that those names resolve to, so a test that starts a server through a helper of
``tests/support/`` is found as one that uses a fixture is.

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
        "Supervisor",
        "start_local",
        "start_time_skipping",
        "running_stack",
        "monitor_process",
        "running_phoenix",
    }
)
"""Names whose use starts a server: the helpers of ``tests/support/``, the services'
supervisor and Temporal's ``WorkflowEnvironment`` starters."""

STACK_COMMANDS = frozenset({"up", "demo"})
"""CLI commands that start a stack: a test naming one and starting a process is ``stack``."""

BROWSER_NAMES = frozenset({"chromium", "require_chromium", "async_playwright"})
"""Names whose use launches a browser (``tests/support/browser.py``, Playwright)."""

PROCESS_NAMES = frozenset(
    {"subprocess", "Popen", "create_subprocess_exec", "create_subprocess_shell", "executable"}
)
"""Names whose use starts a process (``sys.executable`` is how tests name a Python child)."""


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


def _own_traits(code: types.CodeType) -> set[str]:
    """What one code object shows by itself: ``server``, ``browser``, ``process``, ``command``."""
    traits = set()
    names = set(code.co_names)
    if names & STACK_NAMES:
        traits.add("server")
    if names & BROWSER_NAMES:
        traits.add("browser")
    if names & PROCESS_NAMES:
        traits.add("process")
    if any(isinstance(c, str) and c in STACK_COMMANDS for c in code.co_consts):
        traits.add("command")
    return traits


class Reach:
    """What each function reaches; remembered per function across the session."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._seen: dict[Callable[..., Any], frozenset[str]] = {}

    def traits(self, func: Callable[..., Any]) -> frozenset[str]:
        """The traits (``server``, ``browser``, ``process``, ``command``) that calling ``func``
        may show, through the suite's own helpers it names."""
        found = self._seen.get(func)
        if found is not None:
            return found
        self._seen[func] = frozenset()  # a cycle of helpers ends here
        traits: set[str] = set()
        scope = getattr(func, "__globals__", {})
        for code in _codes(func.__code__):
            traits |= _own_traits(code)
            for name in code.co_names:
                target = scope.get(name)
                if target is not None and _defined_under(target, self._root):
                    for inner in _functions_of(target):
                        traits |= self.traits(inner)
        self._seen[func] = frozenset(traits)
        return self._seen[func]

    def marks(self, funcs: Iterable[Callable[..., Any]]) -> list[str]:
        """The markers a test earns from its function and its fixtures' (``funcs``)."""
        traits: set[str] = set()
        for func in funcs:
            for inner in _functions_of(func):
                traits |= self.traits(inner)
        marks = []
        if "server" in traits or {"command", "process"} <= traits:
            marks.append("stack")
        if "browser" in traits:
            marks.append("browser")
        if "process" in traits and not marks:
            marks.append("slow")
        return marks
