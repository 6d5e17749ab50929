"""One console process's session: its own host name, secret and cookies, made when it starts.

Cookies do not keep ports apart: a cookie set by ``127.0.0.1:PORT`` goes to every server on
``127.0.0.1``, whoever runs it. So each console start (``semspec ui``, which ``semspec up``
runs) picks a host name of its own under ``*.localhost`` (``s-<16 hex>.localhost``; Chromium and
Firefox send any ``*.localhost`` to loopback themselves, no resolver needed) and a fresh secret.
The session cookie is host-only: a browser sends it to that name alone, never to
``127.0.0.1:<other port>``. Its value is an HMAC under the fresh secret of the host, port, start
and issue time, good for ``SESSION_S`` and renewed while pages are used; a console started later
(after ``semspec down``, or another ``semspec ui``) has another secret and refuses it.

What the console started with is written to ``console-<port>.json`` in the run folder (0600),
for ``semspec status``/``up`` to print the login URL and for ``up``'s health check; the console
removes the file when it stops.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from semspec.core.run_folder import make_private_dir, write_private

TOKEN_PARAM = "token"
COOKIE = "semspec_console"
SESSION_S = 8 * 3600
"""How long a session cookie opens the console without use: a working day."""
RENEW_AFTER_S = 600
"""A cookie older than this is replaced by a fresh one on the next answer, so a console in use
never logs its owner out, and one left alone does after ``SESSION_S``."""
CLOCK_SKEW_S = 60
"""A cookie issued this far in the future still counts (the clock stepped back)."""
LEGACY_SECRET_FILE = "console.token"
"""Where consoles before per-start sessions kept one secret for good; removed on start."""


@dataclass(frozen=True)
class ConsoleSession:
    """The host name, port, secret and start time of one running console."""

    host: str
    port: int
    secret: str
    started: int

    @property
    def authority(self) -> str:
        """What a browser sends as ``Host`` to this console."""
        return f"{self.host}:{self.port}"

    @property
    def origin(self) -> str:
        """The console's origin, as a browser sends it in ``Origin``."""
        return f"http://{self.authority}"

    def login_url(self, path: str = "/") -> str:
        """The URL that logs a browser in (it carries the secret)."""
        return f"{self.origin}{path}?{urlencode({TOKEN_PARAM: self.secret})}"

    def cookie_value(self, issued: int) -> str:
        """The session cookie's value issued at ``issued`` (seconds since the epoch)."""
        return f"{issued}.{self._mac(issued)}"

    def cookie_issued(self, value: str | None, now: float) -> int | None:
        """When the cookie ``value`` was issued, if it is this console's and still good."""
        if not value:
            return None
        issued_text, _, mac = value.partition(".")
        if not issued_text.isdigit() or len(issued_text) > 12:
            return None
        issued = int(issued_text)
        if not hmac.compare_digest(mac.encode(), self._mac(issued).encode()):
            return None
        if issued > now + CLOCK_SKEW_S or now - issued > SESSION_S:
            return None
        return issued

    def _mac(self, issued: int) -> str:
        bound = f"semspec console session|{self.authority}|{self.started}|{issued}"
        return hmac.new(self.secret.encode(), bound.encode(), hashlib.sha256).hexdigest()


def new_session(port: int) -> ConsoleSession:
    """A session for a console starting on ``port``: new host name, new 256-bit secret."""
    return ConsoleSession(
        host=f"s-{secrets.token_hex(8)}.localhost",
        port=port,
        secret=secrets.token_urlsafe(32),
        started=int(time.time()),
    )


def session_file(run_dir: Path, port: int) -> Path:
    """Where the console on ``port`` keeps its session."""
    return run_dir / f"console-{port}.json"


def save_session(run_dir: Path, session: ConsoleSession) -> Path:
    """Write ``session`` for ``status`` and the health check (0600), dropping the secret an
    older console kept for good."""
    make_private_dir(run_dir)
    path = session_file(run_dir, session.port)
    write_private(path, json.dumps(asdict(session)))
    (run_dir / LEGACY_SECRET_FILE).unlink(missing_ok=True)
    return path


def load_session(path: Path) -> ConsoleSession | None:
    """The session kept at ``path``; None when missing, malformed or readable by others."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode) or stat.S_IMODE(path.stat().st_mode) & 0o077:
            return None
        raw = json.loads(path.read_text(encoding="utf-8"))
        return ConsoleSession(
            host=str(raw["host"]),
            port=int(raw["port"]),
            secret=str(raw["secret"]),
            started=int(raw["started"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def forget_session(run_dir: Path, session: ConsoleSession) -> None:
    """Remove the session file of a stopping console, unless another console wrote it since."""
    path = session_file(run_dir, session.port)
    if load_session(path) == session:
        path.unlink(missing_ok=True)


def login_url(address: str, run_dir: Path) -> str | None:
    """The URL that logs a browser in to the console serving at ``address``
    (``http://127.0.0.1:PORT``, as ``services.json`` records it); None while it has no session."""
    port = urlsplit(address).port
    session = load_session(session_file(run_dir, port)) if port else None
    return session.login_url() if session else None
