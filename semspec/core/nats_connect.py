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
from nats.errors import AuthorizationError
from nats.errors import Error as NatsError

from semspec.core.config.models import nats_servers
from semspec.core.errors import ServiceError
from semspec.core.logging import get_logger

FIRST_CONNECT_S = 10.0
"""How long a process waits for some NATS server to accept it before it says none answers."""

SERVER_CONNECT_S = 2.0
"""Bound of one TCP (and TLS) connect to one server; the next server is tried after it."""

HINT = "start the services with `semspec up`, or check services.nats.url and `semspec status`"

EXTERNAL_HINT = (
    "check that the NATS servers run, and services.nats.url and the credentials"
    " (user, password, token, creds_file, auth_file); `semspec status` shows what answers"
)
"""For the NATS of ``services.nats.url``: ``semspec up`` starts nothing there."""


class NatsConnectError(ServiceError):
    """No NATS server accepted the first connect: ``refused`` when one answered and turned the
    client away (wrong credentials, TLS required), else none answered in time."""

    def __init__(self, message: str, *, address: str, hint: str, refused: bool) -> None:
        self.refused = refused
        super().__init__(message, service="nats", address=address, hint=hint)


async def connect_nats(
    servers: str | Sequence[str],
    options: dict[str, Any],
    name: str,
    *,
    first_connect_s: float = FIRST_CONNECT_S,
    reconnect_wait_s: float = 2.0,
    external: bool | None = None,
) -> NATS:
    """A client connected to one of ``servers`` (a list, or a comma-separated string) with the
    credentials in ``options`` (``services.connect.nats_options``), or a ``NatsConnectError``
    when none accepts it within ``first_connect_s``. ``external``: whether ``servers`` come from
    ``services.nats.url`` (True) or ``semspec up`` (False), for the error's hint."""
    urls = nats_servers(servers if isinstance(servers, str) else list(servers))
    client = NATS()
    last: list[Exception] = []
    refusal: list[Exception] = []
    connected = False

    async def on_error(exc: Exception) -> None:
        # nats-py's default logs each failed attempt with a traceback: while connecting, keep
        # the last error (and the last refusal) for the message; once connected, say what
        # happened in one line.
        if connected:
            get_logger("nats").warning("nats error", client=name, error=describe_error(exc))
        else:
            last[:] = [exc]
            # A server that refuses also closes the socket: the next attempt's error may be
            # a reset that hides why.
            if _turned_away(exc):
                refusal[:] = [exc]

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
            found = refusal or last
            cause: Exception | None = found[0] if found else None
            word = "refused" if refusal else "last error"
            why = f" ({word}: {describe_error(cause)})" if cause else ""
            message = f"no server accepted a connection within {first_connect_s:g}s{why}"
        else:
            message = f"cannot connect: {describe_error(exc)}"
            cause = exc
        raise NatsConnectError(
            message,
            address=", ".join(urls),
            hint=_hint(external, urls),
            refused=_turned_away(cause),
        ) from None
    connected = True
    return client


def _hint(external: bool | None, urls: list[str]) -> str:
    # The embedded server is one node: a caller that does not say is on a cluster when it
    # names several.
    return EXTERNAL_HINT if external or (external is None and len(urls) > 1) else HINT


def _turned_away(exc: Exception | None) -> bool:
    """True when a server answered the connect and refused it. nats-py raises its plain
    ``Error`` for the server's ``-ERR`` reply to a connect (auth violation, TLS required);
    its subclasses and ``OSError`` are connections that failed or were lost."""
    return isinstance(exc, AuthorizationError) or type(exc) is NatsError


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of an error, for one-line reports (nats-py's messages are often empty)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
