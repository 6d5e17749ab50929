"""A gate or command agent dies with the worker that started it (issue 26).

After a kill -9 of a worker its gates ran to their end, and a retried gate on another worker
overlapped them in the same worktree. The launcher (``fence_launch.py``) therefore no longer
becomes the command: it starts the command as its child, in its own process group, and stays
as that group's leader, asking the kernel (``PR_SET_PDEATHSIG``) for ``DEATH_SIGNAL`` when the
worker dies. On it, it kills the run's cgroup (which holds what left the group with setsid)
and then the whole group, itself included. A fenced command dies the same way: bubblewrap is
in the group, and its ``--die-with-parent`` and PID namespace take the fenced processes along.

The signal follows the death of the thread that started the launcher; the worker starts gates
from its event loop and agents from threads that live as long as it. Standard library only:
the launcher loads this file by path, before anything else of the worker.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGHUP
"""What the kernel sends the launcher when the worker dies: a session leader without a
terminal gets no other SIGHUP, and unlike SIGKILL it lets the launcher end its group first."""
NO_START = 125


def watch_parent(parent: int, cgroup: str) -> None:
    """End this process group (and ``cgroup``) once this process's parent is gone, or at once
    when process ``parent`` (the worker) is already gone."""
    signal.signal(DEATH_SIGNAL, lambda *_: end_run(cgroup))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    # The worker may have died before the request above: then no signal will come. (It is
    # asked by PID, not as our parent: a test may start the launcher through runuser.)
    if parent and not _alive(parent):
        end_run(cgroup)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    return True


def end_run(cgroup: str) -> None:
    """Kill everything of this run: its cgroup's members, then its process group (and so
    this process)."""
    if cgroup:
        try:
            with open(os.path.join(cgroup, "cgroup.kill"), "w", encoding="ascii") as kill:
                kill.write("1\n")
        except OSError:
            pass  # no cgroup.kill (before Linux 5.14), or already gone: the group still ends
    os.killpg(os.getpgrp(), signal.SIGKILL)


def supervise(command: Sequence[str]) -> int:
    """Run ``command`` as a child and wait for it: its exit status, or minus the signal that
    killed it (as ``subprocess`` reports it)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], list(command))
        except OSError as exc:
            print(f"semspec: could not start {command[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(NO_START)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def exit_like(code: int) -> int:
    """Leave as the command did: the same status, or death by the same signal (so the worker
    sees what it saw when the launcher became the command)."""
    if code < 0:
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code  # not reached for a signal whose default ends the process
    return code
