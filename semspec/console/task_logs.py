"""A gate's full log, served only when the task's own records name it.

No part of the address is joined into a path: the address picks a gate run by iteration and
position, the task's log names that run's file, and the file must then be a regular file (not a
symlink) inside this task's logs under the stack's run folder. The file is opened once, without
following a final symlink, checked again through the descriptor (on Linux, where it really
leads), and read from that descriptor, so it cannot be swapped between the check and the read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread

from semspec.console.task_timeline import gate_log_path
from semspec.workflow.task.messages import TaskStatus

CHUNK_BYTES = 64 * 1024


class LogRefused(Exception):
    """The log cannot be served; the message says why, for the person who asked."""


def open_gate_log(status: TaskStatus, iteration: int, index: int, run_dir: Path) -> int:
    """A read-only descriptor of the log the task's records name for that gate run, after the
    checks above; LogRefused otherwise. Blocking: run it in a worker thread."""
    named = gate_log_path(status, iteration, index)
    if named is None:
        raise LogRefused(f"task {status.task_id} has no gate run {index} in iteration {iteration}")
    path = Path(named)
    root = Path(os.path.realpath(run_dir / "logs" / status.task_id))
    real = Path(os.path.realpath(path))
    if not path.is_absolute() or not real.is_relative_to(root):
        raise LogRefused(f"the log of that gate run is not among task {status.task_id}'s logs")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise LogRefused(f"the log of that gate run cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LogRefused("the log of that gate run is not a regular file")
    # A folder on the way swapped for a symlink after the check above would have led the open
    # elsewhere; on Linux the descriptor's own path says where it really leads.
    opened = Path(f"/proc/self/fd/{fd}")
    if opened.is_symlink() and not Path(os.readlink(opened)).is_relative_to(root):
        os.close(fd)
        raise LogRefused(f"the log of that gate run is not among task {status.task_id}'s logs")
    return fd


async def read_chunks(fd: int) -> AsyncIterator[bytes]:
    """The file's bytes in chunks, each read in a worker thread; closes ``fd`` at the end."""
    try:
        while chunk := await anyio.to_thread.run_sync(os.read, fd, CHUNK_BYTES):
            yield chunk
    finally:
        os.close(fd)
