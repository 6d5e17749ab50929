"""A Host check in front of a web page of the stack that has none of its own.

The Temporal dev server's Web UI and NATS's HTTP monitoring answer any ``Host``: a web page
whose name was rebound to 127.0.0.1 (DNS rebinding) reads them as if it were theirs. Neither
offers an allowed-hosts setting, so when the config asks for one (``services.temporal.ui``,
``services.nats.monitor_port``) ``semspec up`` starts the server through this guard:

    python -m semspec.services.host_guard --route 8233:41377 -- temporal server start-dev ...

The guard listens on the printed port (8233) and passes a connection on to the server's own
port (41377, chosen free) only when its first request names ``127.0.0.1:8233`` or
``localhost:8233`` as ``Host``; any other gets ``403`` and is closed. A browser keeps one
connection per origin, so later requests on an admitted connection come from the same page.
The guard runs the server as its child (in a process group of its own, killed if the guard
dies), passes SIGTERM and SIGINT on, and exits with the server's status, so the supervisor
starts and stops the pair as one service.

What it does not do: the server's own port still listens on loopback, where any local user
(and a rebinding page that guesses the port) reaches it directly (docs/security.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass

LOOPBACK = "127.0.0.1"
HEAD_LIMIT = 16 * 1024
"""Largest request head read before deciding (a browser's is a few hundred bytes)."""
HEAD_TIMEOUT_S = 10.0
"""How long a connection may take to send its request head."""
CHUNK = 64 * 1024
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Route:
    """Connections to ``listen`` go on to ``target``, both on loopback."""

    listen: int
    target: int

    @property
    def hosts(self) -> frozenset[str]:
        """The ``Host`` values a page served from this port sends."""
        return frozenset({f"{LOOPBACK}:{self.listen}", f"localhost:{self.listen}"})


def parse_route(text: str) -> Route:
    """``LISTEN:TARGET`` as a ``Route``."""
    listen, sep, target = text.partition(":")
    if not sep or not listen.isdigit() or not target.isdigit():
        raise argparse.ArgumentTypeError(f"expected LISTEN:TARGET ports, got {text!r}")
    return Route(int(listen), int(target))


def host_of(head: bytes) -> str | None:
    """The one ``Host`` header of a request head, lower-cased; None if absent or repeated."""
    found: list[str] = []
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"host":
            found.append(value.strip().decode("latin-1").lower())
    return found[0] if len(found) == 1 else None


REFUSAL = (
    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: 44\r\n\r\nthis port answers only at its own address.\r\n"
)


async def serve_connection(
    route: Route, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Admit one connection to ``route.target`` if its first request names the route's host."""
    try:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            return
        if host_of(head) not in route.hosts:
            writer.write(REFUSAL)
            await writer.drain()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(LOOPBACK, route.target)
        except OSError:
            return
        up_writer.write(head)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
    except (ConnectionError, OSError):
        return
    finally:
        writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy ``source`` to ``sink`` until it ends, then end ``sink``'s side."""
    try:
        while chunk := await source.read(CHUNK):
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (ConnectionError, OSError):
        sink.close()


def _die_with_parent() -> None:
    """In the child: be killed when the guard dies, whatever kills it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


async def run(routes: Sequence[Route], command: Sequence[str]) -> int:
    """Serve ``routes`` while ``command`` runs; its exit status."""
    servers = []
    for route in routes:

        async def handle(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, route: Route = route
        ) -> None:
            await serve_connection(route, reader, writer)

        servers.append(await asyncio.start_server(handle, LOOPBACK, route.listen, limit=HEAD_LIMIT))
    child = await asyncio.create_subprocess_exec(
        *command, preexec_fn=_die_with_parent, process_group=0
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _forward, child, signum)
    try:
        return await child.wait()
    finally:
        for server in servers:
            server.close()


def _forward(child: asyncio.subprocess.Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """``--route LISTEN:TARGET ... -- COMMAND ...``."""
    parser = argparse.ArgumentParser(prog="python -m semspec.services.host_guard")
    parser.add_argument("--route", action="append", type=parse_route, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("the server's command line goes after --")
    code = asyncio.run(run(args.route, command))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
