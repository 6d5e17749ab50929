"""The bearer token of the stack's graph server: made at ``semspec up``, kept in the run folder.

``semspec up`` writes a random token to ``graph.token`` in the run folder (0600, by the one
private-file writer of ``core.run_folder``) and hands the server the file's path, never the token:
every local user may read a command line in ``/proc/PID/cmdline``. Every semspec process of the
stack reads the file (its path is recorded in ``services.json``) and sends the token with each
request; a process of another user cannot read it, so the server refuses that user.
"""

from __future__ import annotations

import secrets
import stat
from pathlib import Path

from semspec.core.errors import ServiceError
from semspec.core.run_folder import make_private_dir, write_private

TOKEN_FILE = "graph.token"


def read_token(path: Path) -> str:
    """The token ``path`` holds (surrounding whitespace dropped)."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceError(
            f"cannot read the graph server's token file {path} ({exc})",
            service="graph store",
            hint="run `semspec up` as the user who owns the stack (it writes the file), or set "
            "graph.token_file to a file this user can read",
        ) from None
    if not token:
        raise ServiceError(f"the graph server's token file {path} is empty", service="graph store")
    return token


def ensure_token(run_dir: Path) -> Path:
    """The path of the stack's token file, made (random token) when there is none yet or when
    the file could have been read by another user."""
    path = run_dir / TOKEN_FILE
    try:
        kept = stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 and bool(read_token(path))
    except (OSError, ServiceError):
        kept = False
    if not kept:
        make_private_dir(run_dir)
        write_private(path, secrets.token_urlsafe(32) + "\n")
    return path
