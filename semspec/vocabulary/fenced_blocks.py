"""Fenced code blocks in a model's reply, and the shell command a text-protocol agent runs.

Agents without tool calls (mini-swe-agent's text protocol, SWE-agent's early prompts) write
their action as a fenced block in the reply. Replay must read the same action the agent ran,
or a healthy run looks silent and a silent one looks busy (issue 24: a reply holding a
```` ```bash ```` block and a ```` ```python ```` block was read as "no tool call", because one
pattern for "a fence with an optional language" let the python block's closing fence open a
match).

So fences are read line by line, as a state machine that pairs each opening fence with its own
closing fence, with the fence rules mini-swe-agent's ``action_regex`` applies (checked against
its own decisions on 20,163 recorded replies: tests/data/real_runs/README.md):

- an opening fence is three or more backticks followed by an info string (its first word is
  the block's language) up to the end of the line. It may stand after text on the same line
  (``THOUGHT: ```python``) when the info string is not empty; an info string holding a
  backtick is inline code in prose (``use ```bash``` blocks``), not a fence;
- inside a block, the next line starting with three backticks closes it, whatever follows on
  that line; nothing else does, so backticks within a command's line stay in the command. A
  fence indented under a list item is closed by a fence indented as far or less;
- a block still open at the end of the text is unclosed.

The action of a reply (``shell_action``) follows mini-swe-agent's own rule: the reply must hold
exactly one closed block whose info string is exactly ``bash`` (its default ``action_regex``)
or ``mswea_bash_command`` (its v2 text-based models); any other block (python, a bare fence, a
diff) is text the agent shows, not runs. No such block, or two, is a format error there: no
tool call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

SHELL_LANGUAGES = frozenset({"bash", "mswea_bash_command"})
"""Info strings whose block mini-swe-agent runs as its one action."""

_OPENING = re.compile(r"^(?P<before>.*?)(?P<fence>`{3,})(?P<info>[^`]*)$")
_CLOSING = re.compile(r"^(?P<indent>[ \t]*)`{3}")


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


def fence_lines(text: str) -> Iterator[tuple[str, str]]:
    """Each line of ``text`` with its part: ``prose``, ``open`` (an opening fence), ``body``
    or ``close`` (a closing fence)."""
    indent = -1  # the open block's indentation, -1 outside any block
    for line in text.splitlines():
        if indent >= 0:
            closing = _CLOSING.match(line)
            if closing and len(closing["indent"]) <= indent:
                indent = -1
                yield line, "close"
            else:
                yield line, "body"
            continue
        opening = _OPENING.match(line)
        before = opening["before"] if opening else ""
        prose = before.strip()
        # Backticks ending a line of prose, or after a code span on it, open nothing.
        if opening is None or (prose and (not opening["info"].strip() or "`" in prose)):
            yield line, "prose"
            continue
        indent = 0 if prose else len(before)  # a fence in a list item closes indented
        yield line, "open"


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced block of ``text`` in order, each opening fence paired with its own close."""
    blocks: list[FencedBlock] = []
    info: str | None = None  # the open block's info string, None outside any block
    body: list[str] = []
    for line, part in fence_lines(text):
        if part == "open":
            match = _OPENING.match(line)
            info, body = (match["info"].strip() if match else ""), []
        elif part == "body":
            body.append(line)
        elif part == "close" and info is not None:
            blocks.append(FencedBlock(info, "\n".join(body), closed=True))
            info = None
    if info is not None:
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
