"""Who may use the console: the holder of this console's session, from its own origin.

Each console start makes a session (``semspec.services.console_session``): a host name of its
own under ``*.localhost``, a fresh secret and the start time. The URL ``up`` prints carries the
secret (``http://s-<hex>.localhost:PORT/?token=SECRET``, as Jupyter does); the console answers
that URL with a host-only session cookie (``HttpOnly``, ``SameSite=Strict``, ``Max-Age`` of
``SESSION_S``) and a redirect to the same page without the token, so the secret leaves the
address bar and the browser's history.

Before any page runs, every request passes these checks (``ConsoleAccess``):

| refused when | status |
|---|---|
| ``Host`` is not the session's ``s-<hex>.localhost:PORT`` (DNS rebinding, another port) | 403 |
| neither a good session cookie nor the right ``?token=`` | 401 (wrong token: 403) |
| a state-changing method comes from another ``Origin`` (or ``Sec-Fetch-Site``) | 403 |

Secrets and cookies are compared with ``hmac.compare_digest``. No answer carries CORS headers,
so no other origin may read one; every answer forbids framing and sends no referrer elsewhere.
A good cookie older than ``RENEW_AFTER_S`` is replaced with a fresh one on the answer.
"""

from __future__ import annotations

import hmac
import time
from urllib.parse import urlencode

from starlette.datastructures import URL, Headers, MutableHeaders, QueryParams
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from semspec.services.console_session import (
    COOKIE,
    RENEW_AFTER_S,
    SESSION_S,
    TOKEN_PARAM,
    ConsoleSession,
)
from semspec.services.console_session import login_url as login_url  # for status, demo

LOOPBACK = "127.0.0.1"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SECURITY_HEADERS: dict[str, str] = {
    # The pages load only the console's own script and style: no inline code, nothing remote.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # The first URL carries the secret: no page may hand it on to another origin as a referrer.
    # Not ``no-referrer``: under it a browser sends ``Origin: null`` with the pages' own form
    # POSTs, and the same-origin check below would refuse every answer from the inbox.
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def same(given: str | None, expected: str) -> bool:
    """Constant-time equality of a presented secret and the expected one."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class ConsoleAccess:
    """The ASGI middleware that admits a request or refuses it before any page sees it."""

    def __init__(self, app: ASGIApp, session: ConsoleSession) -> None:
        self.app = app
        self.session = session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the console serves no websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        now = time.time()
        refused = self.refusal(scope, now)
        if refused is not None:
            await with_security_headers(refused, scope, receive, send)
            return
        issued = self.session.cookie_issued(cookie_of(Headers(scope=scope), COOKIE), now)
        renew = issued is not None and now - issued > RENEW_AFTER_S

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(
                    raw=[
                        (k, v)
                        for k, v in message.get("headers", [])
                        if not k.lower().startswith(b"access-control-")
                    ]
                )
                for key, value in SECURITY_HEADERS.items():
                    headers[key] = value
                if renew:
                    headers.append("set-cookie", self.cookie_header(int(now)))
                message["headers"] = headers.raw
            await send(message)

        await self.app(scope, receive, send_secured)

    def refusal(self, scope: Scope, now: float) -> Response | None:
        """The answer to a request that may not pass, or None when it may."""
        headers = Headers(scope=scope)
        if not self.addressed_to_me(scope, headers):
            return refuse(403, "this console answers only at the address `semspec status` prints")
        token = QueryParams(scope.get("query_string", b"")).get(TOKEN_PARAM)
        if token is not None:
            if not same(token, self.session.secret):
                return refuse(403, "wrong token: open the URL `semspec ui` or `semspec up` printed")
            if scope["method"] in SAFE_METHODS:
                return self.log_in(scope, now)
        elif self.session.cookie_issued(cookie_of(headers, COOKIE), now) is None:
            return refuse(
                401, "open the URL `semspec status` prints (with its token) to log in again"
            )
        if scope["method"] not in SAFE_METHODS and not same_origin(headers, self.session.origin):
            return refuse(403, "refused: this action must come from the console's own page")
        return None

    def addressed_to_me(self, scope: Scope, headers: Headers) -> bool:
        """Whether the request came in on this console's loopback socket and names its host
        (a DNS-rebinding page or a forwarded request names another)."""
        server = scope.get("server")
        if not server or server[0] != LOOPBACK or int(server[1]) != self.session.port:
            return False
        host = headers.get("host")
        return host is not None and same(host.lower(), self.session.authority)

    def log_in(self, scope: Scope, now: float) -> Response:
        """The right token: the session cookie, and the same page again without the token."""
        url = URL(scope=scope)
        kept = [(k, v) for k, v in QueryParams(url.query).multi_items() if k != TOKEN_PARAM]
        # One leading slash: "//host/..." would send the browser to another site.
        target = "/" + url.path.lstrip("/") + (f"?{urlencode(kept)}" if kept else "")
        response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
        response.headers.append("set-cookie", self.cookie_header(int(now)))
        return response

    def cookie_header(self, issued: int) -> str:
        """A ``Set-Cookie`` value for a session cookie issued at ``issued``: no ``Domain``, so
        the browser sends it to this console's host name alone."""
        value = self.session.cookie_value(issued)
        # Plain HTTP on loopback: no ``Secure``; the cookie never leaves the machine.
        return f"{COOKIE}={value}; Max-Age={SESSION_S}; Path=/; HttpOnly; SameSite=Strict"


def cookie_of(headers: Headers, name: str) -> str | None:
    """The value of cookie ``name`` in the request's ``Cookie`` header."""
    for header in headers.getlist("cookie"):
        for part in header.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
    return None


def same_origin(headers: Headers, origin: str) -> bool:
    """Whether a state-changing request comes from the console's own page: its ``Origin`` is
    the console's, and a browser that says where the request comes from says the same."""
    given = headers.get("origin")
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    return same(given, origin)


def refuse(status: int, reason: str) -> Response:
    """A refusal that tells nothing but its reason."""
    return PlainTextResponse(reason + "\n", status, headers={"Cache-Control": "no-store"})


async def with_security_headers(
    response: Response, scope: Scope, receive: Receive, send: Send
) -> None:
    """Send ``response`` with the console's security headers."""
    response.headers.update(SECURITY_HEADERS)
    await response(scope, receive, send)
