"""Bounded capture of a gate's output: everything to a log file, a head and a tail in memory.

A gate may print gigabytes; memory holds at most ``2 * max_bytes`` (plus one line being masked)
however much arrives, and the inline text handed to agents is at most ``max_bytes`` including
the line that says how much was left out and where the full log is. The log file stops at
``max_log_bytes`` (``gates.max_log_bytes``) and then ends with a line saying how much was cut.

Secrets are masked (``semspec.core.masking``) line by line before anything is kept: the log
file, the inline text and so the Temporal history and the next prompt never hold one. The
worker's secret values are masked in their encoded forms too (base64, hex, reversed), also when
a line break cuts one: a line ending with the start of one waits for the next.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from semspec.core.masking import StreamMasker, worker_masker

UNCAPPED = 1 << 62


class OutputCapture:
    """Streams chunks to ``log_path`` (up to ``max_log_bytes``) and keeps the first and last
    ``max_bytes`` in memory."""

    def __init__(
        self,
        log_path: Path,
        max_bytes: int,
        max_log_bytes: int = UNCAPPED,
        secret_names: tuple[str, ...] = (),
    ) -> None:
        """``secret_names``: variables whose values are masked whatever their names (the
        gate's ``gates.env``)."""
        self.log_path = log_path
        self.max_bytes = max_bytes
        self.max_log_bytes = max_log_bytes
        self.total_bytes = 0
        self.log_bytes = 0
        self._head = bytearray()
        self._tail = bytearray()
        self._log: BinaryIO | None = None
        self._masker = StreamMasker(worker_masker(secret_names))

    def __enter__(self) -> OutputCapture:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._keep(self._masker.close())
        if self._log is not None:
            if self.log_cut:
                self._log.write(self._log_marker().encode())
            self._log.close()
            self._log = None

    def write(self, chunk: bytes) -> None:
        """Mask ``chunk``'s complete lines and append them to the log and the head/tail."""
        if masked := self._masker.feed(chunk):
            self._keep(masked)

    def _keep(self, chunk: bytes) -> None:
        if self._log is not None and self.log_bytes < self.max_log_bytes:
            kept = chunk[: self.max_log_bytes - self.log_bytes]
            self._log.write(kept)
            self.log_bytes += len(kept)
        self.total_bytes += len(chunk)
        room = self.max_bytes - len(self._head)
        if room > 0:
            self._head += chunk[:room]
        self._tail += chunk[-self.max_bytes :]
        # Trim only when the tail has doubled, so each byte is copied a bounded number of times.
        if len(self._tail) > 2 * self.max_bytes:
            del self._tail[: -self.max_bytes]

    def flush(self) -> None:
        """Push buffered log bytes to the file so readers see them while the gate runs."""
        if self._log is not None:
            self._log.flush()

    @property
    def log_cut(self) -> bool:
        """True when the log file stopped at ``max_log_bytes``."""
        return self.total_bytes > self.log_bytes

    def _log_marker(self) -> str:
        cut = self.total_bytes - self.log_bytes
        return (
            f"\n[semspec: log cut at {self.log_bytes} bytes (gates.max_log_bytes); "
            f"{cut} more bytes of output were not written]\n"
        )

    @property
    def truncated(self) -> bool:
        """True when the inline text leaves bytes out."""
        return self.total_bytes > self.max_bytes

    def text(self) -> str:
        """The inline output: all of it when it fits, else head, an omission line, and tail."""
        if not self.truncated:
            return bytes(self._head).decode("utf-8", errors="replace")
        # The omitted count can only shrink from total_bytes, so this marker is the longest.
        reserve = len(self._marker(self.total_bytes))
        budget = max(0, self.max_bytes - reserve)
        head = _cut_utf8_end(bytes(self._head[: budget // 2]))
        tail_size = budget - budget // 2
        tail = _cut_utf8_start(bytes(self._tail[-tail_size:])) if tail_size else b""
        marker = self._marker(self.total_bytes - len(head) - len(tail))[: self.max_bytes]
        return head.decode("utf-8", errors="replace") + marker + tail.decode("utf-8", "replace")

    def _marker(self, omitted: int) -> str:
        return f"\n[... {omitted} bytes omitted; full log: {self.log_path} ...]\n"


def _cut_utf8_end(data: bytes) -> bytes:
    """Drop a multi-byte character split at the end of ``data``."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0xC0:  # lead byte: keep only if its sequence is complete
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
        if byte & 0x80 == 0:  # ASCII
            return data
    return data


def _cut_utf8_start(data: bytes) -> bytes:
    """Drop continuation bytes of a character split at the start of ``data``."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]
