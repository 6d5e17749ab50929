"""A cgroup per gate or command-agent run, where this machine lets the worker make one.

rlimits (``semspec/core/fence_launch.py``) bound each process; a cgroup bounds the run as a
whole, which is what stops a fork bomb run as root (the kernel never applies
``RLIMIT_NPROC`` to uid 0) and catches processes that left the run's process group. Two places
qualify: the worker's own cgroup v2 folder when it is writable and its ``cgroup.subtree_control``
already hands ``pids`` (and maybe ``memory``) to children, as a delegated subtree does; or the
worker's folder in a cgroup v1 ``pids`` hierarchy when it is writable (root on a machine with
v1 mounted). Without either, the rlimits are the only bound. A v1 ``memory`` hierarchy is never
touched: it is often the one the machine's own supervisor uses.

Blocking file I/O throughout: call from a thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from semspec.core.logging import get_logger

REMOVE_TRIES = 40
REMOVE_PAUSE_S = 0.05


@dataclass(frozen=True)
class RunCgroup:
    """One run's cgroup folder and the limits written into it."""

    path: Path
    processes: int
    memory_bytes: int

    def limits_hit(self) -> list[str]:
        """Which of its limits the run ran into (``processes``, ``memory``), from its events."""
        hit = []
        if _event(self.path / "pids.events", "max") > 0:
            hit.append("processes")
        memory = self.path / "memory.events"
        if _event(memory, "max") > 0 or _event(memory, "oom_kill") > 0:
            hit.append("memory")
        return hit

    def remove(self) -> None:
        """Kill whatever is still in it (a daemon that left the process group) and remove it."""
        for _ in range(REMOVE_TRIES):
            for pid in _members(self.path):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(REMOVE_PAUSE_S)  # exiting members still count for a moment
        get_logger("sandbox").warning("could not remove a gate's cgroup", path=str(self.path))


def make_run_cgroup(processes: int, memory_bytes: int) -> RunCgroup | None:
    """A fresh cgroup with ``pids.max`` (and ``memory.max`` on v2) set, or None where none
    can be made (or nothing asks for one)."""
    if not processes and not memory_bytes:
        return None
    for parent, has_memory in _parents():
        path = parent / f"semspec-run-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
        except OSError:
            continue
        try:
            if processes:
                (path / "pids.max").write_text(f"{processes}\n", encoding="ascii")
            if memory_bytes and has_memory:
                (path / "memory.max").write_text(f"{memory_bytes}\n", encoding="ascii")
                # Else the limit only moves the excess to swap; absent without swap accounting.
                with contextlib.suppress(OSError):
                    (path / "memory.swap.max").write_text("0\n", encoding="ascii")
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            continue
        return RunCgroup(path, processes, memory_bytes if has_memory else 0)
    return None


def _parents() -> list[tuple[Path, bool]]:
    """Folders a child cgroup with a pids limit could be made in, and whether it gets memory."""
    own = _own_paths()
    found: list[tuple[Path, bool]] = []
    for mount, fstype, options in _cgroup_mounts():
        if fstype == "cgroup2" and "" in own:
            folder = mount / own[""].lstrip("/")
            given = _words(folder / "cgroup.subtree_control")
            if "pids" in given and os.access(folder, os.W_OK):
                found.append((folder, "memory" in given))
        elif fstype == "cgroup" and "pids" in options and "pids" in own:
            folder = mount / own["pids"].lstrip("/")
            if folder.is_dir() and os.access(folder, os.W_OK):
                found.append((folder, False))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per controller (``""`` for the v2 hierarchy)."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if parts[0] == "0" and not controllers:
            paths[""] = path
        for name in controllers.split(","):
            if name:
                paths[name] = path
    return paths


def _cgroup_mounts() -> list[tuple[Path, str, set[str]]]:
    """(mount point, file system type, super options) of each cgroup file system."""
    mounts: list[tuple[Path, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return mounts
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append((Path(fields[4]), tail[0], set(tail[2].split(","))))
    return mounts


def _members(path: Path) -> list[int]:
    try:
        text = (path / "cgroup.procs").read_text(encoding="ascii")
    except OSError:
        return []
    return [int(word) for word in text.split() if word.isdigit()]


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text(encoding="ascii").split())
    except OSError:
        return set()


def _event(path: Path, name: str) -> int:
    """The counter ``name`` of an events file (``max 3``), 0 when absent."""
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except OSError:
        return 0
    for line in lines:
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0
