"""Fenced code blocks in a model's reply, and the shell command a text-protocol agent runs.

Agents without tool calls (mini-swe-agent's text protocol, SWE-agent's early prompts) write
their action as a fenced block in the reply. Replay must read the same action the agent ran,
or a healthy run looks silent and a silent one looks busy (issue 24: a reply holding a
```` ```bash ```` block and a ```` ```python ```` block was read as "no tool call", because one
pattern for "a fence with an optional language" let the python block's closing fence open a
match).

So fences are read line by line, as a state machine that pairs each opening fence with its own
closing fence:

- an opening fence is a line starting (after at most three spaces) with three or more
  backticks or tildes, then an optional info string whose first word is the block's language;
  a backtick fence's info string holds no backtick, so ```` ``` ```` inside prose on one line
  (``use ```foo``` here``) opens nothing;
- inside a block, only a line of the same fence character, at least as long as the opening one
  and with nothing but spaces after it, closes it; a ```` ```python ```` line inside a bash
  block is part of its body;
- a block still open at the end of the text is unclosed.

The action of a reply (``shell_action``) follows mini-swe-agent's own rule: the reply must hold
exactly one closed block whose info string is exactly ``bash`` (its default ``action_regex``)
or ``mswea_bash_command`` (its v2 text-based models); any other block (python, a bare fence, a
diff) is text the agent shows, not runs. No such block, or two, is a format error there: no
tool call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHELL_LANGUAGES = frozenset({"bash", "mswea_bash_command"})
"""Info strings whose block mini-swe-agent runs as its one action."""

_OPENING = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CLOSING = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*$")


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block: its info string (stripped, "" for a bare fence) and its body."""

    info: str
    body: str
    closed: bool

    @property
    def language(self) -> str:
        """The first word of the info string, lower-cased ("" for a bare fence)."""
        words = self.info.split()
        return words[0].lower() if words else ""


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced block of ``text`` in order, each opening fence paired with its own close."""
    blocks: list[FencedBlock] = []
    fence = ""  # the opening fence of the block we are in, "" outside any block
    info = ""
    body: list[str] = []
    for line in text.splitlines():
        if not fence:
            opening = _OPENING.match(line)
            if opening is None:
                continue
            candidate, rest = opening["fence"], opening["info"]
            if candidate[0] == "`" and "`" in rest:
                continue  # inline code spans on one line (```a``` b), not a fence
            fence, info, body = candidate, rest.strip(), []
            continue
        closing = _CLOSING.match(line)
        if closing is not None and _closes(fence, closing["fence"]):
            blocks.append(FencedBlock(info, "\n".join(body), closed=True))
            fence = ""
            continue
        body.append(line)
    if fence:
        blocks.append(FencedBlock(info, "\n".join(body), closed=False))
    return blocks


def shell_action(text: str) -> str | None:
    """The one shell command a text-protocol reply asks to run, stripped, or None when the
    reply holds no closed ``bash`` block or more than one (the agent's format error)."""
    commands = [
        block.body.strip()
        for block in fenced_blocks(text)
        if block.closed and block.info in SHELL_LANGUAGES
    ]
    return commands[0] if len(commands) == 1 else None


def _closes(opening: str, candidate: str) -> bool:
    return candidate[0] == opening[0] and len(candidate) >= len(opening)
