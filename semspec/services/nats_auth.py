"""The embedded NATS server's credentials: one user with a random password per stack.

``semspec up`` keeps them in ``nats.auth.json`` in the run folder (0600) and hands the server a
config file (0600 too) whose ``authorization`` block it reads with ``-c``: never on its command
line, which every local user may read in ``/proc/PID/cmdline``. Every semspec process of the stack
reads the JSON file (``services.connect.nats_options``); without it the server refuses a client.
The health check connects with them too. The server's HTTP monitoring port, off unless
``services.nats.monitor_port`` is set, asks for nothing; it shows connections and counters,
never the password.
"""

from __future__ import annotations

import json
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semspec.core.run_folder import write_private

AUTH_FILE = "nats.auth.json"
SERVER_CONFIG = "nats-server.conf"
USER = "semspec"


@dataclass(frozen=True)
class NatsAuth:
    """A user name and its password (kept out of ``repr``, hence out of logs)."""

    user: str
    password: str = field(repr=False)

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect``."""
        return {"user": self.user, "password": self.password}


def read_auth(path: Path) -> NatsAuth | None:
    """The credentials ``path`` holds, or None when it is missing or not of that form."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return NatsAuth(str(raw["user"]), str(raw["password"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_auth(run_dir: Path) -> NatsAuth:
    """The stack's credentials, made (random password) when there are none yet, or when the
    file holding them could have been read by another user."""
    path = run_dir / AUTH_FILE
    found = read_auth(path) if _private(path) else None
    if found is not None:
        return found
    made = NatsAuth(USER, secrets.token_urlsafe(32))
    write_private(path, json.dumps({"user": made.user, "password": made.password}))
    return made


def write_server_config(run_dir: Path, auth: NatsAuth) -> Path:
    """Write the server's config file (only the ``authorization`` block: ports and store stay on
    the command line, where ``status`` and ``down`` read them) and return its path."""
    path = run_dir / SERVER_CONFIG
    # JSON strings are valid quoted strings of the NATS config format.
    body = (
        "authorization {\n"
        f"  user: {json.dumps(auth.user)}\n"
        f"  password: {json.dumps(auth.password)}\n"
        "}\n"
    )
    write_private(path, body)
    return path


def _private(path: Path) -> bool:
    try:
        return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    except OSError:
        return False
