"""One gate run per worktree at a time: the later run ends the earlier one (issue 26).

A retried gate (its worker was killed or paused past the heartbeat timeout) must not run beside
the attempt it replaces: in 3 of 5 cases they overlapped in one worktree. The launcher
(``fence_launch.py``) of every gate takes an exclusive ``flock`` on ``lock_path(worktree)``, a
file beside the worktree (outside it, so it is never part of a change, and in the run folder,
which fenced commands do not see), and holds it until the gate ends.

A run that finds the lock held **ends the holder and takes over**, rather than waiting: Temporal
started the new attempt because it gave up on the old one, whose result it will refuse, so the
old run can only waste time and touch files under the new one; waiting could add a whole gate
timeout. The holder is found by the kernel (``/proc/locks``), never by what the file says (a
gate could write there), and only a launcher leading its own process group is killed, group
and all. If the lock is still held ``TAKE_OVER_S`` later, the run does not start.

Standard library only: the launcher loads this file by path.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import time

TAKE_OVER_S = 30.0
"""How long a run waits for an ended holder's lock to be released before it gives up."""
_POLL_S = 0.05
SUFFIX = ".gate-lock"


def lock_path(worktree: str) -> str:
    """The lock file of the gates of ``worktree``: beside it, not in it."""
    return os.path.realpath(worktree).rstrip("/") + SUFFIX


def hold(path: str) -> int:
    """Hold the gate lock at ``path`` for this process (the returned descriptor, closed on
    exec), ending a run that holds it; OSError when that does not free it in time."""
    deadline = time.monotonic() + TAKE_OVER_S
    ended: set[int] = set()
    while True:
        fd = _open_regular(path)
        try:
            if _try_lock(fd):
                if _still_named(fd, path):
                    return fd  # a run that unlinked the file as we opened it is handled below
            else:
                holder = _holder(fd)
                if holder is not None and holder not in ended and _leads_group(holder):
                    os.killpg(holder, signal.SIGKILL)
                    ended.add(holder)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        if time.monotonic() > deadline:
            raise OSError(errno.EBUSY, f"another gate run still holds {path}")
        time.sleep(_POLL_S)


def release(fd: int, path: str) -> None:
    """Remove the lock file (while still holding it) and let it go."""
    try:
        if _still_named(fd, path):
            os.unlink(path)
    finally:
        os.close(fd)


def _open_regular(path: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    return fd


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _still_named(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file ``fd`` locked (another run may have removed it)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _holder(fd: int) -> int | None:
    """The PID holding a flock on ``fd``'s file, as the kernel lists it."""
    held = os.fstat(fd)
    wanted = f"{os.major(held.st_dev):02x}:{os.minor(held.st_dev):02x}:{held.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters are marked "->".
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
            return int(fields[4])
    return None


def _leads_group(pid: int) -> bool:
    try:
        return pid > 1 and os.getpgid(pid) == pid and pid != os.getpgrp()
    except ProcessLookupError:
        return False
