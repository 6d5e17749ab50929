"""The one way semspec connects to NATS: a list of servers, a bounded first connect, then
reconnects for as long as the process lives.

nats-py alone never gives up on a first connect when reconnects are unlimited: it cycles through
the servers for ever, so a command pointed at a dead node would hang. ``connect_nats`` bounds
the first connect (``first_connect_s``) and raises one ``ServiceError`` naming the servers and
the last error; once connected, the client reconnects without limit, trying every server of the
list (and those the cluster announces), so a worker or monitor rides out a node that dies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from nats.aio.client import Client as NATS

from semspec.core.config.models import nats_servers
from semspec.core.errors import ServiceError
from semspec.core.logging import get_logger

FIRST_CONNECT_S = 10.0
"""How long a process waits for some NATS server to accept it before it says none answers."""

SERVER_CONNECT_S = 2.0
"""Bound of one TCP (and TLS) connect to one server; the next server is tried after it."""

HINT = "start the services with `semspec up`, or check services.nats.url and `semspec status`"


async def connect_nats(
    servers: str | Sequence[str],
    options: dict[str, Any],
    name: str,
    *,
    first_connect_s: float = FIRST_CONNECT_S,
    reconnect_wait_s: float = 2.0,
) -> NATS:
    """A client connected to one of ``servers`` (a list, or a comma-separated string) with the
    credentials in ``options`` (``services.connect.nats_options``), or a ``ServiceError`` when
    none accepts it within ``first_connect_s``."""
    urls = nats_servers(servers if isinstance(servers, str) else list(servers))
    client = NATS()
    last: list[Exception] = []
    connected = False

    async def on_error(exc: Exception) -> None:
        # nats-py's default logs each failed attempt with a traceback: while connecting, keep
        # the last error for the message; once connected, say what happened in one line.
        if connected:
            get_logger("nats").warning("nats error", client=name, error=describe_error(exc))
        else:
            last[:] = [exc]

    # Seconds may be fractions, though nats-py's annotations say int.
    bounds: dict[str, Any] = {
        "connect_timeout": min(SERVER_CONNECT_S, first_connect_s),
        "reconnect_time_wait": reconnect_wait_s,
    }
    connecting = client.connect(
        urls,
        name=name,
        error_cb=on_error,
        allow_reconnect=True,
        max_reconnect_attempts=-1,
        **bounds,
        **options,
    )
    try:
        await asyncio.wait_for(connecting, first_connect_s)
    except BaseException as exc:
        # Cancelled or failed half way: the client holds a socket and tasks; close them here,
        # as nobody else has the client.
        await client.close()
        if not isinstance(exc, Exception):
            raise
        if isinstance(exc, TimeoutError):
            why = f" (last error: {describe_error(last[0])})" if last else ""
            message = f"no server accepted a connection within {first_connect_s:g}s{why}"
        else:
            message = f"cannot connect: {describe_error(exc)}"
        raise ServiceError(
            message,
            service="nats",
            address=", ".join(urls),
            hint=HINT,
        ) from None
    connected = True
    return client


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of an error, for one-line reports (nats-py's messages are often empty)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
