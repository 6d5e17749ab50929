"""Start detached service processes and stop them only when we know we started them.

A process is "ours" when its PID is recorded in ``.semspec/run/`` *and* its current command
line still matches what we recorded; this keeps ``semspec down`` from killing an unrelated
process that reused the PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def start_detached(argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None) -> int:
    """Start ``argv`` in its own session with output to ``log_path``; return its PID."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    return proc.pid


def cmdline_of(pid: int) -> list[str] | None:
    """Command line of a live process, or None when it is gone (zombies count as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return None
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_ours(pid: int, argv: list[str]) -> bool:
    """True when ``pid`` is alive and still runs the recorded command line."""
    current = cmdline_of(pid)
    if not current or not argv:
        return False
    # Compare the tail: interpreters may rewrite argv[0] (e.g. a resolved python path).
    return current[1:] == argv[1:] and Path(current[0]).name == Path(argv[0]).name


def stop(pid: int, argv: list[str], grace_s: float = 10.0) -> bool:
    """SIGTERM the process (then SIGKILL after ``grace_s``) if it is ours; True if it stopped."""
    if not is_ours(pid, argv):
        return False
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if cmdline_of(pid) is None:
            return True
        time.sleep(0.05)
    _signal(pid, signal.SIGKILL)
    for _ in range(100):
        _reap(pid)
        if cmdline_of(pid) is None:
            break
        time.sleep(0.05)
    return True


def _signal(pid: int, signum: int) -> None:
    """Signal the process group we started (children included), else the process alone.

    A process that does not lead its own group (e.g. one restarted by hand) has no group of
    its PID; signalling only it then still stops it.
    """
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our child, so it does not linger."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
