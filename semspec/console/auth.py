"""Who may use the console: the holder of the stack's secret, from the console's own origin.

The secret is random, made by ``semspec up`` (or ``semspec ui``), and kept in the run folder
(``console.token``, mode 0600) like the stack's other secrets. The URL ``up`` prints carries it
(``http://127.0.0.1:PORT/?token=SECRET``, as Jupyter does); the console answers that URL with a
session cookie (``HttpOnly``, ``SameSite=Strict``) and a redirect to the same page without the
token, so the secret leaves the address bar and the browser's history.

Before any page runs, every request passes these checks (``ConsoleAccess``):

| refused when | status |
|---|---|
| ``Host`` is not the loopback address:port the console serves (DNS rebinding) | 403 |
| neither a valid session cookie nor the right ``?token=`` | 401 (wrong token: 403) |
| a state-changing method comes from another ``Origin`` (or ``Sec-Fetch-Site``) | 403 |

Secrets and cookies are compared with ``hmac.compare_digest``. No answer carries CORS headers,
so no other origin may read one; every answer forbids framing and sends no referrer.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import stat
from pathlib import Path
from urllib.parse import urlencode

from starlette.datastructures import URL, Headers, QueryParams
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from semspec.core.run_folder import make_private_dir, write_private

SECRET_FILE = "console.token"
TOKEN_PARAM = "token"
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


def read_secret(run_dir: Path) -> str | None:
    """The console's secret kept in ``run_dir``, or None when there is none readable by its
    owner only."""
    path = run_dir / SECRET_FILE
    try:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            return None
        found = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return found or None


def ensure_secret(run_dir: Path) -> str:
    """The stack's console secret, made (random, 256 bits) when there is none yet or when the
    file holding it could have been read by another user."""
    found = read_secret(run_dir)
    if found is not None:
        return found
    make_private_dir(run_dir)
    made = secrets.token_urlsafe(32)
    write_private(run_dir / SECRET_FILE, made)
    return made


def console_url(port: int, secret: str | None = None, path: str = "/") -> str:
    """The console's address; with ``secret``, the URL that logs a browser in."""
    base = f"http://{LOOPBACK}:{port}{path}"
    return f"{base}?{urlencode({TOKEN_PARAM: secret})}" if secret else base


def login_url(address: str, run_dir: Path) -> str | None:
    """The URL that logs a browser in to the console serving at ``address``
    (``http://127.0.0.1:PORT``) with the secret kept in ``run_dir``; None without one."""
    secret = read_secret(run_dir)
    return f"{address}/?{urlencode({TOKEN_PARAM: secret})}" if secret else None


def cookie_name(port: int) -> str:
    """The session cookie's name. Cookies do not keep ports apart, so two stacks' consoles on
    one machine would overwrite each other's cookie under one name."""
    return f"semspec_console_{port}"


def session_value(secret: str) -> str:
    """What the session cookie holds: derived from the secret, so the cookie is not the URL
    token itself."""
    return hmac.new(secret.encode(), b"semspec console session", hashlib.sha256).hexdigest()


def same(given: str | None, expected: str) -> bool:
    """Constant-time equality of a presented secret and the expected one."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class ConsoleAccess:
    """The ASGI middleware that admits a request or refuses it before any page sees it."""

    def __init__(self, app: ASGIApp, secret: str) -> None:
        self.app = app
        self.secret = secret
        self.session = session_value(secret)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the console serves no websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        refused = self.refusal(scope)
        if refused is not None:
            await with_security_headers(refused, scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if not k.lower().startswith(b"access-control-")
                ]
                message["headers"] = headers + [
                    (k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                ]
            await send(message)

        await self.app(scope, receive, send_secured)

    def refusal(self, scope: Scope) -> Response | None:
        """The answer to a request that may not pass, or None when it may."""
        headers = Headers(scope=scope)
        port = served_port(scope)
        if port is None or headers.get("host") != f"{LOOPBACK}:{port}":
            return refuse(403, "this console answers only at its own loopback address")
        token = QueryParams(scope.get("query_string", b"")).get(TOKEN_PARAM)
        if token is not None:
            if not same(token, self.secret):
                return refuse(403, "wrong token: open the URL `semspec ui` or `semspec up` printed")
            if scope["method"] in SAFE_METHODS:
                return self.log_in(scope, port)
        elif not same(cookie_of(headers, cookie_name(port)), self.session):
            return refuse(401, "open the URL `semspec ui` or `semspec up` printed (with its token)")
        if scope["method"] not in SAFE_METHODS and not same_origin(headers, port):
            return refuse(403, "refused: this action must come from the console's own page")
        return None

    def log_in(self, scope: Scope, port: int) -> Response:
        """The right token: the session cookie, and the same page again without the token."""
        url = URL(scope=scope)
        kept = [(k, v) for k, v in QueryParams(url.query).multi_items() if k != TOKEN_PARAM]
        # One leading slash: "//host/..." would send the browser to another site.
        target = "/" + url.path.lstrip("/") + (f"?{urlencode(kept)}" if kept else "")
        response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
        response.set_cookie(
            cookie_name(port),
            self.session,
            path="/",
            httponly=True,
            samesite="strict",
            secure=False,  # plain HTTP on loopback; the cookie never leaves the machine
        )
        return response


def served_port(scope: Scope) -> int | None:
    """The port the request came in on, if on the loopback address."""
    server = scope.get("server")
    if not server or server[0] != LOOPBACK:
        return None
    return int(server[1])


def cookie_of(headers: Headers, name: str) -> str | None:
    """The value of cookie ``name`` in the request's ``Cookie`` header."""
    for header in headers.getlist("cookie"):
        for part in header.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
    return None


def same_origin(headers: Headers, port: int) -> bool:
    """Whether a state-changing request comes from the console's own page: its ``Origin`` is
    the console's, and a browser that says where the request comes from says the same."""
    origin = headers.get("origin")
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    return origin is not None and hmac.compare_digest(
        origin.encode(), f"http://{LOOPBACK}:{port}".encode()
    )


def refuse(status: int, reason: str) -> Response:
    """A refusal that tells nothing but its reason."""
    return PlainTextResponse(reason + "\n", status, headers={"Cache-Control": "no-store"})


async def with_security_headers(
    response: Response, scope: Scope, receive: Receive, send: Send
) -> None:
    """Send ``response`` with the console's security headers."""
    response.headers.update(SECURITY_HEADERS)
    await response(scope, receive, send)
