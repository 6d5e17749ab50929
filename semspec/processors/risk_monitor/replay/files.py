"""Reading a recorded file: only a regular file, only up to a bound, then by its format.

A file given to ``semspec monitor replay`` may come from anywhere, so reading it must neither
hang (a FIFO, a device), nor fill memory (a huge or endless file, JSON nested without end), nor
end in a traceback: every problem is a ``ReplayFileError`` naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from semspec.processors.risk_monitor.replay.chat_log import Pricer, chat_run
from semspec.processors.risk_monitor.replay.runs import RecordedRun, ReplayFileError
from semspec.processors.risk_monitor.replay.semspec_events import event_runs

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest recorded file read."""
ATIF_NOT_READ = (
    "an Agent Trajectory Interchange Format file: not read (no kept package for the format "
    "exists on PyPI; see docs/risk-monitor.md)"
)


def read_runs(path: Path, pricer: Pricer) -> list[RecordedRun]:
    """The runs recorded in ``path``; raises ``ReplayFileError``."""
    name = str(path)
    text = _read_text(path, name)
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError:
        return event_runs(name, text)  # several JSON values: one event per line
    except RecursionError:
        raise ReplayFileError(name, "JSON nested too deeply") from None
    if isinstance(document, dict) and str(document.get("schema_version", "")).startswith("ATIF"):
        raise ReplayFileError(name, ATIF_NOT_READ)
    if isinstance(document, list) or (isinstance(document, dict) and "messages" in document):
        return [chat_run(name, document, pricer)]
    if isinstance(document, dict) and "kind" in document:
        return event_runs(name, text)  # a JSONL file of a single event
    raise ReplayFileError(
        name, "not a recording: expected step events (JSONL) or chat messages (JSON)"
    )


def _read_text(path: Path, name: str) -> str:
    try:
        # Non-blocking, so opening a FIFO returns at once instead of waiting for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ReplayFileError(name, exc.strerror or "cannot be opened") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ReplayFileError(name, "not a regular file")
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ReplayFileError(name, exc.strerror or "cannot be read") from None
    if len(data) > MAX_FILE_BYTES:
        raise ReplayFileError(name, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")  # a byte order mark some editors write is not JSON
    except UnicodeDecodeError as exc:
        raise ReplayFileError(name, f"not UTF-8 text (byte {exc.start})") from None
