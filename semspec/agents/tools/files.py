"""Open only regular files: a FIFO, socket or device in a worktree must never make a tool wait.

Opening a FIFO for reading waits for a writer, and for writing waits for a reader, possibly
forever; so files are opened non-blocking and checked with ``fstat`` on the open descriptor
before a byte is read or written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from semspec.agents.workspace import ToolError

_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC


def _refuse(shown: str, mode: int) -> ToolError:
    kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
    return ToolError(f"{shown!r} is {kind}, not a regular file; tools read and write files only")


@contextmanager
def open_regular(path: Path, shown: str) -> Iterator[tuple[BinaryIO, int]]:
    """``path`` open for reading with its size; ``ToolError`` naming ``shown`` when it is not a
    regular file, ``OSError`` when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | _FLAGS)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(shown, info.st_mode)
        yield handle, info.st_size


def write_regular(path: Path, shown: str, data: bytes) -> None:
    """Replace the content of ``path`` (created when missing) unless it is not a regular file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: a blocking open would wait for one
            raise _refuse(shown, stat.S_IFIFO) from exc
        raise ToolError(f"{shown!r} cannot be written: {exc.strerror}") from exc
    with os.fdopen(fd, "wb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(shown, info.st_mode)
        os.set_blocking(fd, True)
        handle.truncate(0)
        handle.write(data)


def check_regular(path: Path, shown: str) -> None:
    """``ToolError`` when ``path`` exists and is not a regular file (e.g. before libgit2 reads
    it)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise _refuse(shown, mode)
