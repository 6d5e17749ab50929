"""Content-defined chunking of large texts so an edit only changes the chunks around it.

Cuts fall only right after a newline that is followed by a non-space character. For the
tiktoken encodings we use, no pre-token spans such a point, so the token count of a text is
exactly the sum of the counts of its chunks. Which candidate becomes a cut depends on the text
just after it (a CRC of the next line's start), not on its offset, so inserting or changing a few
lines moves at most the cuts next to the edit and every other chunk is byte-identical.
"""

from __future__ import annotations

import re
import zlib

MIN_CHUNK = 7 * 1024
"""Characters a chunk holds at least (except the last); candidates before it are not examined."""
MAX_CHUNK = 64 * 1024
"""Past this size the next candidate is taken whatever its hash (bounds re-encoding work)."""
_SELECT_MASK = 0x07
"""1 in 8 candidates past the minimum is a cut: chunks average ~7.5 KB, so an edit re-encodes
about that much, and only ~8 candidates per chunk are hashed (this loop is in Python)."""
_PEEK = 48
"""Characters after a candidate that decide whether it is a cut."""

_CANDIDATE = re.compile(r"\n(?=\S)")


def _selected(text: str, pos: int) -> bool:
    window = text[pos : pos + _PEEK].encode("utf-8", "surrogatepass")
    return zlib.crc32(window) & _SELECT_MASK == 0


def split_chunks(text: str) -> list[str]:
    """Split ``text`` at content-chosen line starts; joining the parts gives ``text`` back."""
    if len(text) < 2 * MIN_CHUNK:
        return [text]
    chunks: list[str] = []
    start = 0
    search = _CANDIDATE.search
    # Jump straight to the minimum size after each cut: only candidates past it cost a hash.
    match = search(text, start + MIN_CHUNK - 1)
    while match is not None:
        pos = match.end()
        if pos - start >= MAX_CHUNK or _selected(text, pos):
            chunks.append(text[start:pos])
            start = pos
            match = search(text, start + MIN_CHUNK - 1)
        else:
            match = search(text, pos)
    chunks.append(text[start:])
    return chunks
