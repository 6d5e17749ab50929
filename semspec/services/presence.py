"""Which worker and monitor processes serve a stack: one ready file per process.

A Python service writes ``<run_dir>/ready/<role>-<pid>.json`` once it serves and removes it when it
stops, so a second ``semspec worker`` on the same stack adds a file instead of overwriting the
first one's. The file names the process's identity (the one Temporal shows for a worker), its
command line (a PID later reused by another program never counts as the service) and the addresses
of NATS and Temporal it connected to, so ``status`` can tell a process left on an old address.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from semspec.core.run_folder import cmdline_of, is_ours, make_private_dir, write_private

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
    # Service name -> the address this process uses (e.g. "nats" -> its URL).
    endpoints: dict[str, str] = field(default_factory=dict)

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


def announce(
    run_dir: Path,
    role: str,
    identity: str,
    detail: str = "",
    endpoints: Mapping[str, str] | None = None,
) -> Presence:
    """Record that this process serves as ``role`` using ``endpoints`` (service name ->
    address), atomically and readable by the owner only."""
    pid = os.getpid()
    argv = cmdline_of(pid) or [sys.executable, *sys.argv]
    host = socket.gethostname()
    presence = Presence(role, identity, pid, host, argv, detail, dict(endpoints or {}))
    path = ready_file(run_dir, role, pid)
    make_private_dir(path.parent)
    write_private(path, json.dumps(asdict(presence), sort_keys=True))
    return presence


def outdated_endpoints(presence: Presence, current: Mapping[str, str]) -> list[str]:
    """What ``presence`` uses that is no longer where the service is, e.g.
    ``nats at nats://127.0.0.1:4222 (now nats://127.0.0.1:4300)``."""
    return [
        f"{name} at {used} (now {current[name]})"
        for name, used in sorted(presence.endpoints.items())
        if name in current and current[name] != used
    ]


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
