"""A TCP proxy on loopback that can delay what passes through it: network delay between one
client and its server, switched on and off by a test.

Every chunk read from either side is held until ``delay_s`` (as it was when the chunk arrived)
has passed, then written in arrival order, so a slow link delays bytes but never reorders or
drops them. Runs in the test's event loop; ``close`` ends the listener and every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class DelayProxy:
    """Forwards ``127.0.0.1:<port>`` to ``host:port``; set ``delay_s`` to slow the link."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.delay_s = 0.0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on a free loopback port; the URL a NATS client should use."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"nats://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self._target)
        except OSError:
            client_w.close()
            return
        for reader, writer in ((client_r, server_w), (server_r, client_w)):
            task = asyncio.create_task(self._pump(reader, writer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def release() -> None:
            while True:
                due, chunk = await held.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(release())
        try:
            while chunk := await reader.read(65536):
                held.put_nowait((time.monotonic() + self.delay_s, chunk))
            held.put_nowait((0.0, b""))
            await sender
        finally:
            sender.cancel()
            writer.close()
