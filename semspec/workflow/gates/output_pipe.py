"""The pipe a gate's output comes through: wide, and read in large chunks.

Issue 31 measured bounded capture at several times the cost of reading the same output, and
most of that was not the capture's own work but the pipe: with the kernel's default 64 KiB
buffer a gate printing fast fills it between two reads and waits, each read wakes the writer,
and each 64 KiB costs a turn of the event loop. A pipe of ``PIPE_BYTES`` (Linux's default
``/proc/sys/fs/pipe-max-size``; narrower where that is lower) read ``READ_CHUNK`` at a time
lets the gate run ahead while a chunk is masked and written. Memory stays bounded: the kernel
holds at most ``PIPE_BYTES``, the stream at most twice ``READ_CHUNK``.

The worker makes the pipe itself rather than asking asyncio for one (``stdout=PIPE``), so it
can size it before the gate writes; the worker's copy of the writing end is closed as soon as
the gate has started, so the end of output is the end of the gate's processes, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os

PIPE_BYTES = 1 << 20
READ_CHUNK = 256 * 1024


class OutputPipe:
    """A pipe whose writing end a gate gets as stdout and stderr, read as a stream."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._transport: asyncio.ReadTransport | None = None
        # Above this system's pipe-max-size (EPERM) the default width still works.
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)

    def close_write(self) -> None:
        """Drop the worker's writing end (after the gate started, or when it could not)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    async def reader(self) -> asyncio.StreamReader:
        """The reading end as a stream; the pipe owns it until ``close``."""
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
        source = os.fdopen(self.read_fd, "rb", buffering=0)
        self.read_fd = -1  # the file object, then the transport, own it now
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stream, loop=loop), source
            )
        except BaseException:
            source.close()
            raise
        self._transport = transport
        return stream

    def close(self) -> None:
        """Close both ends that are still open."""
        self.close_write()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        if self._transport is not None:
            self._transport.close()
            self._transport = None
