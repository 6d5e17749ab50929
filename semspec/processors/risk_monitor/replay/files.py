"""Reading a recorded file: only a regular file, only up to a bound, then by its format.

A file given to ``semspec monitor replay`` may come from anywhere, so reading it must neither
hang (a FIFO, a device), nor fill memory (a huge or endless file, a gzip bomb, JSON nested
without end), nor end in a traceback: every problem is a ``ReplayFileError`` naming the file.
A file starting with the gzip magic bytes is decompressed first, up to the same bound.

The formats, tried in this order, and the name ``monitor replay`` gives each: semspec's step
events (``semspec``, JSONL), the agents' recordings of ``agent_formats.FORMATS`` (``atif``,
``swe-agent``, ``openhands``), then a chat log (``mini-swe-agent`` when its ``info`` names
mini's version, else ``chat``).
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from semspec.processors.risk_monitor.replay.agent_formats import FORMATS, is_mini_swe_agent
from semspec.processors.risk_monitor.replay.chat_log import Pricer, chat_run
from semspec.processors.risk_monitor.replay.runs import RecordedRun, ReplayFileError
from semspec.processors.risk_monitor.replay.semspec_events import event_runs

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest recorded file read."""
_GZIP_MAGIC = b"\x1f\x8b"


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
    if isinstance(document, dict) and "kind" in document:
        return event_runs(name, text)  # a JSONL file of a single event
    for fmt in FORMATS:
        if fmt.detect(document):
            return [chat_run(name, fmt.convert(name, document), pricer, fmt.name)]
    if isinstance(document, list) or (isinstance(document, dict) and "messages" in document):
        chat = "mini-swe-agent" if is_mini_swe_agent(document) else "chat"
        return [chat_run(name, document, pricer, chat)]
    raise ReplayFileError(
        name,
        "not a recording: expected step events (JSONL), chat messages, a SWE-agent .traj, "
        "an OpenHands event list or an ATIF trajectory (JSON)",
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
    if data.startswith(_GZIP_MAGIC):
        data = _gunzip(data, name)
    try:
        return data.decode("utf-8-sig")  # a byte order mark some editors write is not JSON
    except UnicodeDecodeError as exc:
        raise ReplayFileError(name, f"not UTF-8 text (byte {exc.start})") from None


def _gunzip(data: bytes, name: str) -> bytes:
    """``data`` decompressed, refused past ``MAX_FILE_BYTES`` (a small bomb stays small)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_FILE_BYTES + 1)
    except zlib.error as exc:
        raise ReplayFileError(name, f"not a readable gzip file ({exc})") from None
    if len(out) > MAX_FILE_BYTES or inflater.unconsumed_tail:
        raise ReplayFileError(name, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB unpacked")
    if not inflater.eof:
        raise ReplayFileError(name, "not a readable gzip file (it ends early)")
    return out
