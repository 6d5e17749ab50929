"""Loopback port helpers."""

from __future__ import annotations

import socket
import time


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on ``host:port`` and we may bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


PREFERRED_WAIT_S = 3.0
"""How long a configured port may stay busy (sockets of a server just stopped) before another
port is taken: `down` then `up` should come back on the address the config names."""


def free_port(preferred: int = 0, host: str = "127.0.0.1", avoid: set[int] | None = None) -> int:
    """``preferred`` when it is (or within ``PREFERRED_WAIT_S`` becomes) free and not in
    ``avoid``, else a port the OS hands out."""
    avoid = avoid or set()
    if preferred and preferred not in avoid:
        deadline = time.monotonic() + PREFERRED_WAIT_S
        while True:
            if port_is_free(preferred, host):
                return preferred
            # A live server keeps it; only the leftovers of a stopped one are worth waiting out.
            if time.monotonic() >= deadline or tcp_answers(host, preferred, timeout=0.2):
                break
            time.sleep(0.1)
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in avoid:
            return port


def tcp_answers(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when a TCP connection to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
