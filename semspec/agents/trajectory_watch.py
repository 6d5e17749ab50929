"""Steps of an agent CLI that prints no stream but rewrites its trajectory file after each step.

mini-swe-agent saves its whole trajectory (``messages``, the format ``mini-swe-agent-1.1``)
after every step, to ``-o``/``--output`` or to ``~/.config/mini-swe-agent/last_mini_run.traj.json``.
Without watching it, a looping run is one step when it ends (issue 24: 610 model calls before
``timeout_s`` killed one, the monitor saw nothing). So the command developer polls the file off
the event loop and reports each new message as a step, like a stream: an assistant message is a
model step (its tokens from the saved response, its tool calls or parsed actions as the action),
each observation a tool step (an error when its return code is not 0).

A file the run has not written yet (left from an earlier run, or half written) is skipped: only
a file changed since the run started, that parses, counts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semspec.agents.cli_streams import ModelStep, StreamStep, ToolStep
from semspec.model.providers.types import AssistantReply, ToolCall, Usage

MINI_PROGRAMS = frozenset({"mini", "mini-swe-agent"})
MINI_DEFAULT_OUTPUT = (".config", "mini-swe-agent", "last_mini_run.traj.json")
"""Where mini-swe-agent 2.x saves a run without ``-o``, under its home."""
NOT_EXECUTED = "action was not executed"
"""mini-swe-agent's note on the actions of the turn that submitted."""
MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024
"""A larger file is not read (its steps are lost, the run goes on)."""


def trajectory_path(program: str, argv: Sequence[str], home: str | None, cwd: Path) -> Path | None:
    """The trajectory file the command writes as it runs, or None when it writes none we know."""
    if program not in MINI_PROGRAMS:
        return None
    args = list(argv)
    for index, arg in enumerate(args):
        if arg in ("-o", "--output") and index + 1 < len(args):
            given = Path(args[index + 1])
            return given if given.is_absolute() else cwd / given
        if arg.startswith("--output="):
            given = Path(arg.split("=", 1)[1])
            return given if given.is_absolute() else cwd / given
    return Path(home, *MINI_DEFAULT_OUTPUT) if home else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class TrajectoryWatch:
    """Reads one run's trajectory file and turns the messages it has not seen into steps."""

    path: Path
    since: float | None = None
    """The file's modification time before the run (None: there was no file)."""
    seen: int = 0
    _calls: dict[str, ToolCall] = field(default_factory=dict)
    _pending: list[ToolCall] = field(default_factory=list)
    """Actions of the last assistant message not yet matched with an observation."""

    @classmethod
    def before_run(cls, path: Path) -> TrajectoryWatch:
        """A watch of ``path`` that ignores what is there before the run (blocking)."""
        try:
            since: float | None = os.stat(path).st_mtime_ns / 1e9
        except OSError:
            since = None
        return cls(path, since)

    def poll(self) -> list[StreamStep]:
        """The steps of messages saved since the last poll (blocking: call it in a thread)."""
        messages = self._messages()
        if messages is None or len(messages) <= self.seen:
            return []
        steps: list[StreamStep] = []
        for message in messages[self.seen :]:
            steps += self._steps(_dict(message))
        self.seen = len(messages)
        return steps

    def finish(self) -> list[StreamStep]:
        """The steps of what the run saved last, once it has ended (blocking)."""
        return self.poll()

    def _messages(self) -> list[Any] | None:
        try:
            stat = os.stat(self.path)
            if self.since is not None and stat.st_mtime_ns / 1e9 <= self.since:
                return None
            if stat.st_size > MAX_TRAJECTORY_BYTES or not Path(self.path).is_file():
                return None
            with open(self.path, "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError):
            return None  # not there yet, or caught half written: the next poll reads it
        messages = _dict(data).get("messages")
        return messages if isinstance(messages, list) else None

    def _steps(self, message: dict[str, Any]) -> list[StreamStep]:
        role, extra = message.get("role"), _dict(message.get("extra"))
        if role == "assistant":
            return [self._model_step(message, extra)]
        if "returncode" in extra or (role == "tool" and message.get("tool_call_id")):
            return [self._tool_step(message, extra)]
        return []  # the system prompt, the task, an exit marker

    def _model_step(self, message: dict[str, Any], extra: dict[str, Any]) -> ModelStep:
        response = _dict(extra.get("response"))
        usage = _dict(response.get("usage"))
        cached = _int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
        actions = [_dict(a) for a in extra.get("actions") or []]
        calls = tuple(
            ToolCall(
                str(action.get("tool_call_id") or f"action-{self.seen}-{index}"),
                "bash",
                {"command": action.get("command")},
            )
            for index, action in enumerate(actions)
        )
        self._pending = list(calls)
        for call in calls:
            self._calls[call.id] = call
        text = message.get("content")
        reply = AssistantReply(
            text=text if isinstance(text, str) else "",
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
                cached_tokens=cached,
            ),
        )
        model = response.get("model")
        return ModelStep(reply, model if isinstance(model, str) else None)

    def _tool_step(self, message: dict[str, Any], extra: dict[str, Any]) -> ToolStep:
        ident = str(message.get("tool_call_id") or "")
        call = self._calls.pop(ident, None)
        if call is None:
            call = self._pending.pop(0) if self._pending else ToolCall(ident, "bash")
        elif call in self._pending:
            self._pending.remove(call)
        output = extra.get("raw_output")
        if not isinstance(output, str):
            content = message.get("content")
            output = content if isinstance(content, str) else ""
        code, why = extra.get("returncode"), extra.get("exception_info")
        # The actions of a submitting turn are "not executed": the agent is done, not failing.
        skipped = why == NOT_EXECUTED
        failed = not skipped and ((isinstance(code, int) and code != 0) or bool(why))
        return ToolStep(call, output, failed)
