"""Steps of an Aider run, read from the LLM history file it appends to as it works.

Aider prints no machine-readable stream, but with ``--llm-history-file FILE`` (or
``AIDER_LLM_HISTORY_FILE``) it appends every exchange with the model to ``FILE`` as it happens
(aider 0.86.2, ``InputOutput.log_llm_history``)::

    TO LLM 2026-11-27T11:38:00          the request: its messages, each after a ``-------`` line,
    -------                             every line prefixed with the message's role
    SYSTEM Act as an expert software developer.
    ...
    USER Add sub to calc.py
    LLM RESPONSE 2026-11-27T11:38:01    the reply, every line prefixed with ``ASSISTANT``
    ASSISTANT calc.py
    ASSISTANT ```python
    ...

One ``aider --message`` run sends the task, and then sends back what went wrong with the
reply (an edit whose SEARCH text is not in the file, lint errors, files it added to the chat)
at most three times ("reflections"). So each reply is a model step whose action is its fenced
blocks (the edits, in whatever edit format), and the next request's last user message, when
there is one, is that action's outcome: a tool step ``edit``, failed unless Aider only added
files. A reply aider did not answer (the run's last) is a tool step with no output. That is
enough for the step rules to see a reply failing the same way again and again while the run is
still going (issue 24), which before was one step per run, seen when it ended.

Aider does not write its token counts to the file: a watched Aider run stays unpriced.

Entries are read as the file grows. An entry is whole once the next header follows it, or the
run has ended; a request's last user message is whole once a message separator follows it
(Aider ends its requests with a system reminder for most models), so a failed edit is seen as
soon as Aider sends it back, before the model answers again.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from semspec.agents.cli_streams import ModelStep, StreamStep, ToolStep
from semspec.model.providers.types import AssistantReply, ToolCall, Usage
from semspec.vocabulary.fenced_blocks import fenced_blocks

HISTORY_FLAG = "--llm-history-file"
HISTORY_ENV = "AIDER_LLM_HISTORY_FILE"
"""Aider reads each option from ``AIDER_<OPTION>`` too; a flag in the command wins over it."""
HISTORY_NAME = "aider.llm.history.md"
"""The file's name in the agent's private home when the command names none."""
EDIT_TOOL = "edit"
"""The tool name of a reply's edits."""
ADDED_FILES = "I added these files to the chat:"
"""How Aider's reply to a reply that named files outside the chat starts: not a failure."""
MAX_READ_BYTES = 8 * 1024 * 1024
"""At most this much of the file is read a poll (the rest comes at the next one)."""
MAX_ENTRY_CHARS = 16 * 1024 * 1024
"""Characters of one entry kept; the rest of a larger one is not read."""

_HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_SEPARATOR = "-------"
_RESPONSE = "LLM RESPONSE"


def history_flag_path(argv: list[str], cwd: Path) -> Path | None:
    """The history file the command names with ``--llm-history-file``, if it names one."""
    for index, arg in enumerate(argv):
        given = None
        if arg == HISTORY_FLAG and index + 1 < len(argv):
            given = argv[index + 1]
        elif arg.startswith(HISTORY_FLAG + "="):
            given = arg.split("=", 1)[1]
        if given:
            path = Path(given)
            return path if path.is_absolute() else cwd / path
    return None


@dataclass
class _Entry:
    kind: str
    lines: list[str] = field(default_factory=list)
    chars: int = 0


def _unprefix(line: str) -> str:
    """A line without its role prefix (``USER text`` → ``text``; ``USER`` alone → "")."""
    return line.split(" ", 1)[1] if " " in line else ""


def _role(message: list[str]) -> str:
    return message[0].split(" ", 1)[0] if message else ""


def _last_user_message(lines: list[str], whole: bool) -> str | None:
    """The request's last user message, or None while it may still be growing.

    Aider's requests are its system prompt, then user and assistant messages, then (for most
    models) a system reminder: a user message with a system message after it is the last one,
    whole, before the rest of the request is written.
    """
    messages: list[list[str]] = []
    for line in lines:
        if line == _SEPARATOR:
            messages.append([])
        elif messages:
            messages[-1].append(line)
    users = [i for i, message in enumerate(messages) if _role(message) == "USER"]
    ended = [i for i in users if i + 1 < len(messages) and _role(messages[i + 1]) == "SYSTEM"]
    if ended:
        last = ended[0]
    elif whole and users:
        last = users[-1]
    else:
        return None
    return "\n".join(_unprefix(line) for line in messages[last])


@dataclass
class AiderHistoryWatch:
    """Reads one run's part of an Aider LLM history file and turns its exchanges into steps."""

    path: Path
    offset: int = 0
    """Where the run's part of the file starts (the file's size before the run)."""
    seen: int = 0
    """Exchanges read (model steps reported)."""
    counts_tokens = False
    _partial: str = ""
    """Bytes after the last whole line, decoded."""
    _entries: list[_Entry] = field(default_factory=list)
    """Entries not fully handled yet: the last one may still grow."""
    _pending: ToolCall | None = None
    """The edits of the last reply, whose outcome has not been seen."""

    @classmethod
    def before_run(cls, path: Path) -> AiderHistoryWatch:
        """A watch of what the run appends to ``path`` (blocking)."""
        try:
            offset = os.stat(path).st_size
        except OSError:
            offset = 0
        return cls(path, offset)

    def poll(self) -> list[StreamStep]:
        """The steps the run's new entries complete (blocking: call it in a thread)."""
        self._read()
        return self._steps(whole=False)

    def finish(self) -> list[StreamStep]:
        """Every step left once the run has ended (blocking)."""
        self._read()
        if self._partial:
            self._line(self._partial)
            self._partial = ""
        steps = self._steps(whole=True)
        if self._pending is not None:
            # Aider sent nothing back about its last reply: the run ended after it.
            steps.append(ToolStep(self._pending, "", False))
            self._pending = None
        return steps

    def _read(self) -> None:
        try:
            if not Path(self.path).is_file():
                return
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(MAX_READ_BYTES)
        except OSError:
            return
        if not data:
            return
        # Only whole UTF-8 lines: a poll may catch a line, even a character, half written.
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        text = self._partial + data[:cut].decode("utf-8", "replace")
        self._partial = ""
        for line in text.split("\n")[:-1]:
            self._line(line)

    def _line(self, line: str) -> None:
        if _HEADER.match(line):
            self._entries.append(_Entry(line.rsplit(" ", 1)[0]))
        elif self._entries:
            entry = self._entries[-1]
            entry.chars += len(line)
            if entry.chars <= MAX_ENTRY_CHARS:  # past it, the entry is read cut short
                entry.lines.append(line)

    def _steps(self, whole: bool) -> list[StreamStep]:
        steps: list[StreamStep] = []
        while self._entries:
            entry = self._entries[0]
            complete = whole or len(self._entries) > 1
            if entry.kind == _RESPONSE:
                if not complete:
                    break
                steps.append(self._reply(entry))
            elif self._pending is not None:
                message = _last_user_message(entry.lines, complete)
                if message is None and not complete:
                    break
                failed = not (message or "").startswith(ADDED_FILES)
                steps.append(ToolStep(self._pending, message or "", failed))
                self._pending = None
                if not complete:
                    break
            elif not complete:
                break
            self._entries.pop(0)
        return steps

    def _reply(self, entry: _Entry) -> ModelStep:
        text = "\n".join(_unprefix(line) for line in entry.lines)
        blocks = [f"{block.info}\n{block.body}" for block in fenced_blocks(text)]
        calls: tuple[ToolCall, ...] = ()
        if blocks:
            call = ToolCall(f"aider-{self.seen}", EDIT_TOOL, {"blocks": blocks})
            calls, self._pending = (call,), call
        self.seen += 1
        return ModelStep(AssistantReply(text=text, tool_calls=calls, usage=Usage()))
