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
import sys
import time
from pathlib import Path

from semspec.core.run_folder import PRIVATE_FILE_MODE, cmdline_of, is_ours, make_private_dir

# Run by a short-lived intermediate Python: it starts the service in a new session and exits,
# so the service is re-parented to init. The caller then holds no child process at all: no
# zombie when the service dies while the caller lives on (tests, long-running callers), and
# no "subprocess still running" warning when the caller's handle is dropped. The umask makes
# everything the service writes (its log, database, store, worktrees) its owner's only.
_LAUNCHER = """
import os, subprocess, sys
log_path, cwd, *argv = sys.argv[1:]
os.umask(0o077)
with open(log_path, "ab") as log:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            cwd=cwd, start_new_session=True)
print(proc.pid, flush=True)
"""


def start_detached(argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None) -> int:
    """Start ``argv`` in its own session, detached from us, with output to ``log_path``.

    Returns the service's PID; raises ``OSError`` when it cannot be started at all.
    """
    make_private_dir(log_path.parent)
    if log_path.exists():
        # Written by an older version with the default umask.
        log_path.chmod(PRIVATE_FILE_MODE)
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(log_path), str(cwd), *argv]
    done = subprocess.run(
        launcher, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise OSError(f"cannot start {argv[0]}: {last}")
    return int(done.stdout.strip())


def stop(pid: int, argv: list[str], grace_s: float = 10.0) -> bool:
    """SIGTERM the process (then SIGKILL after ``grace_s``) if it is ours; True if it stopped."""
    if not is_ours(pid, argv):
        return False
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if cmdline_of(pid) is None:
            _wait_released(pid)
            return True
        time.sleep(0.05)
    _signal(pid, signal.SIGKILL)
    for _ in range(100):
        _reap(pid)
        if cmdline_of(pid) is None:
            break
        time.sleep(0.05)
    _wait_released(pid)
    return True


def _wait_released(pid: int, timeout_s: float = 5.0) -> None:
    """Wait (bounded) until no thread of the process runs: its main thread shows as a zombie
    while other threads still exit and hold its sockets, so a port may still answer."""
    deadline = time.monotonic() + timeout_s
    while _threads_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.02)


def _threads_alive(pid: int) -> bool:
    """True while some thread of ``pid`` is not yet a zombie."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            return True
    return False


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
