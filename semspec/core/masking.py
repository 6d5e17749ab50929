"""The one masking of secrets: log fields, gate output and command-agent output all pass here.

Three kinds of text are replaced by ``MASK``: values shaped like a vendor credential (OpenAI,
Anthropic, AWS, GitHub, Slack, Google keys, bearer tokens), the value of a secret-named
``NAME=value`` assignment (what ``env`` prints), and the exact value of every secret-named
variable of this process's environment (``AWS_SECRET_ACCESS_KEY`` has no shape of its own).
See ``docs/security.md``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

MASK = "***"

SECRET_NAME = re.compile(
    r"(api[_-]?key|access[_-]?key|token|secret|password|passwd|authorization|credential"
    r"|private[_-]?key)",
    re.I,
)
"""A key or variable name whose value is a secret whatever it looks like."""

_SHAPES = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-[A-Za-z0-9_\-]{8,}",  # also sk-proj-…
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{16,}",
    r"xox[abpr]-[A-Za-z0-9\-]{10,}",
    r"A(?:KIA|SIA)[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_\-]{30,}",
    r"Bearer\s+[A-Za-z0-9._~+/\-]{8,}=*",
)
# ``OPENAI_API_KEY=…``, ``AWS_SECRET_ACCESS_KEY: …``: shell-style upper-case names only, so
# prose such as ``tokens=1200`` stays readable.
_ASSIGNMENT = (
    r"(?<![A-Za-z0-9_])(?P<name>[A-Z0-9_]*(?:API_KEY|ACCESS_KEY|TOKEN|SECRET|PASSWORD|PASSWD"
    r"|CREDENTIALS?|PRIVATE_KEY)[A-Z0-9_]*)(?P<sep>=|: ?)(?P<value>[^\s'\"]{4,})"
)
MIN_SECRET_CHARS = 8
"""Shorter values of secret-named variables are not masked by value: ``1`` or ``true`` would
turn every number in a log into ``***``."""


def mask_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with credentials replaced by ``MASK`` (``environ`` defaults to this process's)."""
    values = secret_values(os.environ if environ is None else environ)
    return _pattern(values).sub(_replace, text)


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of the secret-named variables of ``environ``, longest first."""
    found = {
        value
        for name, value in environ.items()
        if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET_CHARS
    }
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


@functools.lru_cache(maxsize=8)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    literals = [re.escape(v) for v in values]
    return re.compile("|".join([*literals, _ASSIGNMENT, *_SHAPES]))


def _replace(match: re.Match[str]) -> str:
    if match.group("name") is not None:
        return f"{match.group('name')}{match.group('sep')}{MASK}"
    return MASK
