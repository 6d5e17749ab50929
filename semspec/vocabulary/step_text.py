"""What of a step's output counts when the risk monitor compares two steps.

The step rules see hashes, never text (``semspec.processors.risk_monitor.step_rules``), so the
hash decides what "the same output" means. A test run failing the same way twice prints
``1 failed in 0.12s`` and then ``1 failed in 0.15s``; a crash names another object address each
time; a log line starts with the time it was written. Hashed raw, none of these ever repeat and
a loop looks like progress. ``output_digest`` hashes the output with those parts blanked, and it
is the one hash of outputs: the live agents (``semspec.agents.steps.observation_hash``) and
``semspec monitor replay`` (``semspec.processors.risk_monitor.replay``) both call it, so a
recorded run is judged exactly as the live monitor judged it.

What is blanked, and only that:

- timestamps: ``2026-11-20T10:00:01Z``, ``2026-11-20 10:00:01,123`` and a clock time alone
  (``10:00:01``, ``0:01:02``), which needs seconds, so ``file.py:12:5`` is left as it is;
- durations: a number directly followed by ``ms``, ``s``, ``sec``, ``secs``, ``second(s)``
  (``0.12s``, ``250 ms``, ``3 seconds``);
- memory addresses: ``0x`` and eight or more hex digits (``<Foo object at 0x7f3a2c1b9d40>``).

Everything else is output that means something and must stay: counts (``1 failed, 5 passed``,
``3 of 10 done``), line and column numbers, short hex values (``0xff``, an exit code ``0x1``),
sizes, ids. Output that differs in any of them is a different output, so polling a job whose
progress changes never looks like a loop.
"""

from __future__ import annotations

import hashlib
import re

# One pass over the text: every blanked form starts with a digit, and the lookahead lets the
# engine skip the rest of the text fast (about 1 ms for 50 KB, a quarter of one pass per form).
_BLANKED = re.compile(
    r"(?=\d)(?:"
    r"(?P<time>\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|(?<![\d:])\d{1,2}:\d\d:\d\d(?:\.\d+)?(?![\d:]))"
    r"|(?P<duration>(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b)"
    r"|(?P<address>\b0x[0-9a-fA-F]{8,}\b)"
    r")"
)
_BLANKS = {"time": "<time>", "duration": "<duration>", "address": "0x<address>"}


def normalized_output(text: str) -> str:
    """``text`` with timestamps, durations and memory addresses blanked, stripped at both ends."""
    return _BLANKED.sub(_blank, text).strip()


def _blank(match: re.Match[str]) -> str:
    return _BLANKS[match.lastgroup or "time"]


def text_digest(text: str) -> str:
    """A short hash (16 hex digits) of ``text`` exactly as it is."""
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


NORMALIZED_EDGE = 256 * 1024
"""Characters blanked at each end of a very long output; its middle is hashed as it is."""


def output_digest(text: str) -> str:
    """The hash of what a step returned: equal for outputs that differ only in what
    ``normalized_output`` blanks.

    An output over twice ``NORMALIZED_EDGE`` is blanked at its start and end only (where a
    command prints its times and summary): blanking megabytes would hold the worker's event
    loop for a large part of a second, where the bounded work takes a few milliseconds.
    """
    if len(text) <= 2 * NORMALIZED_EDGE:
        return text_digest(normalized_output(text))
    head, middle, tail = (
        text[:NORMALIZED_EDGE],
        text[NORMALIZED_EDGE:-NORMALIZED_EDGE],
        text[-NORMALIZED_EDGE:],
    )
    return text_digest(
        "\n".join((normalized_output(head), text_digest(middle), normalized_output(tail)))
    )


_SLEEP = re.compile(r"^\s*sleep\s+\d+(\.\d+)?[smh]?\s*$")


def is_wait_call(arguments: object) -> bool:
    """Whether a shell tool call only sleeps (``{"command": "sleep 5"}``): a wait between the
    checks of a poll, which the step rules skip. The live command agent and replay both ask
    this, so a recorded poll is judged as the live one was."""
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return isinstance(command, str) and bool(_SLEEP.match(command))
