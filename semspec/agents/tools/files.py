"""Open only regular files of bounded size; every refusal of the OS becomes a ``ToolError``.

Opening a FIFO waits for the other end, possibly forever; opening a device can have effects of
its own; a sparse file can claim gigabytes it never stored. So a path is ``lstat``-ed first and
only a regular file no larger than the limit is opened, with ``O_NONBLOCK`` (a FIFO swapped in
after the check still opens without waiting) and ``O_NOFOLLOW`` (as would a symlink), and
checked again with ``fstat`` on the open descriptor before a byte moves. Reads stop one byte
past the limit, so a file that grows after the check is refused too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from semspec.agents.workspace import ToolError, os_error

MAX_FILE_BYTES = 2_000_000
"""The largest file a tool reads or writes."""
_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
_BINARY_PROBE = 8192


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _refuse(shown: str, mode: int) -> ToolError:
    return ToolError(
        f"{shown!r} is {_kind(mode)}, not a regular file; tools read and write regular files only"
    )


def _too_large(shown: str, size: int, limit: int) -> ToolError:
    return ToolError(
        f"{shown!r} is {size} bytes, larger than the {limit} bytes tools read or write; "
        "search for the lines you need instead"
    )


def _regular_info(path: Path, shown: str, action: str) -> os.stat_result | None:
    """``lstat`` of ``path`` when it is a regular file, None when nothing is there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, shown, action) from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(shown, info.st_mode)
    return info


def regular_size(path: Path, shown: str, limit: int = MAX_FILE_BYTES) -> int | None:
    """The size of the regular file at ``path``, None when nothing is there; ``ToolError`` when
    it is something else (a link, a FIFO, a device, a folder) or larger than ``limit``."""
    info = _regular_info(path, shown, "read")
    if info is not None and info.st_size > limit:
        raise _too_large(shown, info.st_size, limit)
    return None if info is None else info.st_size


def read_regular(path: Path, shown: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``), or a ``ToolError`` naming
    ``shown``."""
    if regular_size(path, shown, limit) is None:
        raise ToolError(f"{shown!r} does not exist; use list_dir or search to find files")
    chunks: list[bytes] = []
    total = 0
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _refuse(shown, info.st_mode)
            while total <= limit:
                chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        raise os_error(exc, shown, "read") from None
    if total > limit:
        raise _too_large(shown, total, limit)
    return b"".join(chunks)


def read_lines(path: Path, shown: str) -> list[str]:
    """The lines of the text file ``path``; ``ToolError`` for a binary file or any refusal."""
    data = read_regular(path, shown)
    if is_binary(data):
        raise ToolError(f"{shown!r} is a binary file")
    return data.decode("utf-8", "replace").splitlines()


def is_binary(data: bytes) -> bool:
    """Whether ``data`` looks binary (a NUL byte near the start), as git decides."""
    return b"\x00" in data[:_BINARY_PROBE]


def write_regular(path: Path, shown: str, data: bytes) -> None:
    """Replace the content of ``path`` (created with its folders when missing) unless it is not
    a regular file; ``ToolError`` naming ``shown`` for any refusal."""
    _regular_info(path, shown, "written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: a blocking open would wait for one
            raise _refuse(shown, stat.S_IFIFO) from None
        raise os_error(exc, shown, "written") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(shown, info.st_mode)
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise os_error(exc, shown, "written") from None
    finally:
        os.close(fd)


def check_regular(path: Path, shown: str) -> None:
    """``ToolError`` when ``path`` exists and is not a regular file of bounded size (e.g. before
    libgit2 reads it, which would wait on a FIFO holding the GIL)."""
    regular_size(path, shown)
