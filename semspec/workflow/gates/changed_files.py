"""``{changed_files}`` in a gate's command: run the tool on the files the change touched only
(issue 29, item 2: the other way to keep a repository's old failures out of a task's gates).

The file names never become shell text: ``{changed_files}`` turns into ``"$@"`` and the names
are the shell's positional arguments (``sh -c COMMAND gate FILE...``), each prefixed with
``./`` so that none reads as an option. ``{changed_files:GLOB}`` keeps the files whose path
matches ``GLOB`` (``fnmatch``, e.g. ``*.py``). Names are relative to the gate's working folder;
files outside it, and files the change deleted, are left out. A gate with no such file runs a
no-op that says so, instead of its tool over the whole repository.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from semspec.workflow.gates.types import GateSpec

PLACEHOLDER = re.compile(r"\{changed_files(?::(?P<glob>[^{}]+))?\}")
NOTHING_CHANGED = "echo 'semspec: no changed file for this gate; it did not run its tool'"
"""What a gate runs when the change touched none of its files (constant text, no data)."""


def uses_changed_files(spec: GateSpec) -> bool:
    """Whether ``spec``'s command names ``{changed_files}``."""
    return PLACEHOLDER.search(spec.command) is not None


def with_changed_files(spec: GateSpec, changed: list[str], worktree: Path) -> GateSpec:
    """``spec`` with ``{changed_files}`` turned into ``"$@"`` and the matching files as its
    arguments; unchanged when its command does not name them."""
    found = PLACEHOLDER.search(spec.command)
    if found is None:
        return spec
    glob = found["glob"]
    folder = PurePosixPath(spec.working_dir)
    args = []
    for name in sorted(set(changed)):
        path = PurePosixPath(name)
        if folder != PurePosixPath(".") and folder not in path.parents:
            continue
        if glob and not (fnmatch(str(path), glob) or fnmatch(path.name, glob)):
            continue
        if not (worktree / name).is_file():
            continue  # deleted by the change
        relative = path.relative_to(folder) if folder != PurePosixPath(".") else path
        args.append(f"./{relative}")
    if not args:
        return replace(spec, command=NOTHING_CHANGED, args=[])
    return replace(spec, command=PLACEHOLDER.sub('"$@"', spec.command), args=args)


def specs_for_change(specs: list[GateSpec], worktree: Path, base_commit: str) -> list[GateSpec]:
    """Every gate of ``specs``, those naming ``{changed_files}`` given the files the worktree
    changed since ``base_commit`` (git is read only when one does)."""
    if not any(uses_changed_files(spec) for spec in specs):
        return specs
    from semspec.workflow.git.diff import worktree_diff

    changed = worktree_diff(worktree, base_commit, max_patch_chars=0).files
    return [with_changed_files(spec, changed, worktree) for spec in specs]
