"""A path a user typed that the system refuses to look up, as one error line, not a traceback."""

from __future__ import annotations

from pathlib import Path


def os_refusal(path: Path) -> str | None:
    """Why the system refuses to look ``path`` up (a name too long, a folder on the way this
    user may not enter, a link loop), or None when it can look, whether or not it exists."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None
