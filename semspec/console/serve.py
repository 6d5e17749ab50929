"""Serve the console on a loopback socket with uvicorn until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from semspec.console.app import create_app
from semspec.console.auth import LOOPBACK
from semspec.console.state import ConsoleState
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import run_dir_of
from semspec.services.console_session import forget_session, new_session, save_session

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
    the URL carrying this start's secret once the socket listens. The session (host name,
    secret) is new each start and its file is removed when the console stops, so nothing a
    browser got from an earlier start opens this one."""
    run_dir = run_dir_of(config, repo)
    sock = bind_loopback(port)
    session = new_session(int(sock.getsockname()[1]))
    save_session(run_dir, session)
    try:
        app = create_app(ConsoleState(config, repo, session))
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
        announce(session.login_url(), session.port)
        server.run(sockets=[sock])
    finally:
        forget_session(run_dir, session)
