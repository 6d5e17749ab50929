"""Which worker and monitor processes serve a stack: one ready file per process.

A Python service writes ``<run_dir>/ready/<role>-<pid>.json`` once it serves and removes it when it
stops, so a second ``semspec worker`` on the same stack adds a file instead of overwriting the
first one's. The file names the process's identity (the one Temporal shows for a worker) and its
command line: a PID later reused by another program never counts as the service.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from semspec.core.run_folder import cmdline_of, is_ours

READY_DIR = "ready"


@dataclass(frozen=True)
class Presence:
    """One serving process: its role (worker, monitor), identity, PID, host and command line."""

    role: str
    identity: str
    pid: int
    host: str
    argv: list[str] = field(default_factory=list)
    detail: str = ""

    def alive(self) -> bool:
        """True when the process runs on this host and still runs the recorded command line."""
        return self.host == socket.gethostname() and is_ours(self.pid, self.argv)


def default_identity() -> str:
    """``pid@host``: the identity Temporal gives a worker unless told otherwise."""
    return f"{os.getpid()}@{socket.gethostname()}"


def ready_dir(run_dir: Path) -> Path:
    """The folder holding one ready file per serving process."""
    return run_dir / READY_DIR


def ready_file(run_dir: Path, role: str, pid: int) -> Path:
    """The ready file of process ``pid`` serving as ``role``."""
    return ready_dir(run_dir) / f"{role}-{pid}.json"


def announce(run_dir: Path, role: str, identity: str, detail: str = "") -> Presence:
    """Record that this process serves as ``role`` (atomically: temp file + rename)."""
    pid = os.getpid()
    argv = cmdline_of(pid) or [sys.executable, *sys.argv]
    presence = Presence(role, identity, pid, socket.gethostname(), argv, detail)
    path = ready_file(run_dir, role, pid)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(presence), sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return presence


def withdraw(run_dir: Path, presence: Presence) -> None:
    """Remove the ready file of ``presence`` (when the process stops serving)."""
    ready_file(run_dir, presence.role, presence.pid).unlink(missing_ok=True)


def read_presence(path: Path) -> Presence | None:
    """The presence a ready file records, or None when it is missing or unreadable."""
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Presence(**raw)
    except (OSError, ValueError, TypeError):
        return None


def present(run_dir: Path, role: str) -> list[Presence]:
    """Live processes serving as ``role``, by PID; files of this host's dead processes go."""
    found = []
    for path in sorted(ready_dir(run_dir).glob(f"{role}-*.json")):
        presence = read_presence(path)
        if presence is None or presence.role != role:
            continue
        if presence.alive():
            found.append(presence)
        elif presence.host == socket.gethostname():
            # Left by a process that was killed: it can never serve again.
            with contextlib.suppress(OSError):
                path.unlink()
    return sorted(found, key=lambda p: p.pid)
