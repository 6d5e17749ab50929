"""Serve the console on a loopback socket with uvicorn until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from semspec.console.app import create_app
from semspec.console.auth import LOOPBACK, console_url, ensure_secret
from semspec.console.state import ConsoleState
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import run_dir_of

SHUTDOWN_S = 3
"""How long open pages (their event streams never end by themselves) may hold up a stop."""


class ConsoleServer(uvicorn.Server):
    """uvicorn's server, stopping on SIGINT or SIGTERM and then exiting normally, as
    ``semspec worker`` does (uvicorn raises the signal again once it stopped)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        stops = (signal.SIGINT, signal.SIGTERM)
        before = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


def bind_loopback(port: int) -> socket.socket:
    """A listening socket on the loopback address (``port`` 0: one the OS picks). Listening
    before uvicorn runs: the URL printed next works at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise ServiceError(
            f"cannot listen on port {port}: {exc.strerror}",
            service="console",
            address=f"{LOOPBACK}:{port}",
            hint="set another `console.port` in .semspec/config.yaml (0 = any free port)",
        ) from None
    sock.listen(128)
    return sock


def serve_console(
    config: SemspecConfig, repo: Path, port: int, announce: Callable[[str, int], None]
) -> None:
    """Serve the console of ``repo``'s stack on ``port``; ``announce(url, port)`` is called with
    the URL carrying the secret once the socket listens."""
    secret = ensure_secret(run_dir_of(config, repo))
    sock = bind_loopback(port)
    bound = int(sock.getsockname()[1])
    app = create_app(ConsoleState(config, repo, secret))
    server = ConsoleServer(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            proxy_headers=False,  # nothing proxies a loopback console; never trust forwarded
            server_header=False,
            timeout_graceful_shutdown=SHUTDOWN_S,
        )
    )
    announce(console_url(bound, secret), bound)
    server.run(sockets=[sock])
