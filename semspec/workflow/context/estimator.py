"""Token counts per model tokenizer, with a content-hash cache, on top of ``semspec.model.tokens``.

The encodings are the offline ones ``semspec.model.tokens`` loads (never a download); a model whose
tokenizer has no offline copy, or has none at all (Claude, open models), is counted with cl100k
and marked approximate.

Texts are split into content-defined chunks (``chunking.py``) and each chunk's count is cached
under its blake2b digest, so re-counting a 1 MB diff with a few changed lines only encodes the
chunks those lines fall in.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from semspec.model.tokens import FALLBACK_ENCODING, load_offline, resolve_encoding
from semspec.workflow.context.chunking import split_chunks


@dataclass(frozen=True)
class TokenCount:
    """Tokens of a text, whether the count is only approximate, and the encoding used."""

    tokens: int
    approximate: bool
    encoding: str


@dataclass(frozen=True)
class CacheStats:
    """Cache hits and misses (one per chunk looked up) and the entries held now."""

    hits: int
    misses: int
    entries: int


SHARED_CACHE_ENTRIES = 50_000
"""Chunks remembered per encoding by the process-wide cache (~16 KB of text each on average)."""


class _CountCache:
    """A thread-safe LRU of chunk digest -> token count, bounded by entries."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._data: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> int | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: bytes, value: int) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@functools.cache
def _shared_cache(encoding: str) -> _CountCache:
    # One cache per encoding for the whole process, so every estimator of a worker benefits.
    return _CountCache(SHARED_CACHE_ENTRIES)


class TokenEstimator:
    """Counts tokens for one tokenizer; safe to share between threads."""

    def __init__(
        self, tokenizer: str | None = FALLBACK_ENCODING, *, max_entries: int | None = None
    ):
        """Count for ``tokenizer``; ``max_entries`` gives a private cache, else the shared one."""
        if max_entries is not None and max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.encoding_name, self.approximate = resolve_encoding(tokenizer)
        self._encoding = load_offline(self.encoding_name)
        self._cache = (
            _shared_cache(self.encoding_name) if max_entries is None else _CountCache(max_entries)
        )

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (special-token markers are counted as plain text)."""
        total = 0
        for chunk in split_chunks(text):
            key = hashlib.blake2b(chunk.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            cached = self._cache.get(key)
            if cached is None:
                cached = len(self._encoding.encode_ordinary(chunk))
                self._cache.put(key, cached)
            total += cached
        return total

    def estimate(self, text: str) -> TokenCount:
        """Tokens of ``text`` together with the encoding and whether the count is approximate."""
        return TokenCount(self.count(text), self.approximate, self.encoding_name)

    def stats(self) -> CacheStats:
        """Hits, misses and size of the chunk cache."""
        return CacheStats(self._cache.hits, self._cache.misses, len(self._cache))
