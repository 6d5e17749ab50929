"""Node's form of testing the wrong code: a ``node_modules`` link into the user's checkout
(issue 29, item 1).

Node resolves ``require("@me/lib")`` by walking up from the importing file through every
``node_modules`` folder. A task's worktree lives under the run folder, by default inside the
repository (``.semspec/run/worktrees/ID``), and has no ``node_modules`` of its own (git does not
track it), so the walk reaches the checkout's: an npm, yarn or pnpm workspace links each of its
packages there (``node_modules/@me/lib -> ../packages/lib``), and the gate's tests would load
the checkout's ``packages/lib`` instead of the change's. A link that leads into the checkout,
outside the worktree, to a folder the worktree has its own copy of, is refused before the first
gate, unless the worktree's own ``node_modules`` holds that package (Node finds it first).
Links to anything else (a registry package, a library elsewhere) are the user's setup and stay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from semspec.core.errors import GateError
from semspec.workflow.gates.import_roots import checkout_of

MAX_ENTRIES = 20_000
"""``node_modules`` entries looked at, over every folder: a large install has a few thousand."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def _links(node_modules: str, budget: list[int]) -> Iterator[tuple[str, str]]:
    """(package name, link path) of each symbolic link directly in ``node_modules`` or in one
    of its ``@scope`` folders, within ``budget`` entries."""
    try:
        entries = sorted(os.scandir(node_modules), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
            try:
                scoped = sorted(os.scandir(entry.path), key=lambda e: e.name)
            except OSError:
                continue
            for inner in scoped:
                budget[0] -= 1
                if budget[0] < 0:
                    return
                if inner.is_symlink():
                    yield f"{entry.name}/{inner.name}", inner.path
        elif entry.is_symlink():
            yield entry.name, entry.path


def check_node_links(worktree: Path, gate: str = "gates") -> None:
    """``GateError`` when Node, run in the worktree, would load a package of the user's
    checkout in place of the worktree's copy of it (see the module's docstring); blocking."""
    root = os.path.realpath(worktree)
    if not os.path.isfile(os.path.join(root, "package.json")):
        return
    checkout = checkout_of(worktree)
    if checkout is None:
        return
    budget = [MAX_ENTRIES]
    folders = [root, *(str(p) for p in Path(root).parents)]
    for folder in folders:
        node_modules = os.path.join(folder, "node_modules")
        for name, link in _links(node_modules, budget):
            target = os.path.realpath(link)
            if not _inside(target, checkout) or _inside(target, root):
                continue
            copy = os.path.join(root, os.path.relpath(target, checkout))
            own = os.path.join(root, "node_modules", name)
            if not os.path.isdir(copy) or (folder != root and os.path.lexists(own)):
                continue
            raise GateError(
                f"{link} links the package {name} to {target}, the user's checkout, not the "
                f"worktree {root}: Node would load that code in place of the change's, so no "
                "gate was run",
                gate=gate,
                hint="keep the run folder outside the repository (services.run_dir), or link "
                "workspace packages with relative paths inside the repository",
            )
