"""Steps from the machine-readable streams of agent CLIs run by the ``command`` provider.

Two CLIs print one JSON object a line while they work, and the command developer turns each
line into the steps it reports (``docs/providers.md`` says which flags):

* ``claude -p --output-format stream-json``: an ``assistant`` message is a model step (its
  tokens, its ``tool_use`` blocks as the action); each ``tool_result`` block of the next
  ``user`` message is a tool step; the closing ``result`` line holds the summary and the run's
  totals, whose tokens beyond the message lines (each line says its message's start usage;
  side requests print none) are one more model step.
* ``codex exec --json``: each completed ``command_execution``, ``file_change``,
  ``mcp_tool_call`` or ``web_search`` item is a tool step; ``turn.completed`` (the only line
  with tokens) is a model step; the last ``agent_message`` is the summary.

A run stopped before its totals (``result``, ``turn.completed``) gets an estimate of the tokens
it spent from what it printed, a model step marked ``estimated``.

Any other CLI, or these without the flags, is one step per run. Lines that are not JSON, or
not of a known shape, are skipped: a parser never fails the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from semspec.model.providers.types import AssistantReply, ToolCall, Usage

StreamKind = Literal["claude", "codex"]
CODEX_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})


@dataclass(frozen=True)
class ModelStep:
    """A model call seen in a stream."""

    reply: AssistantReply
    model: str | None = None
    error: str | None = None
    """The CLI's error message when the model call failed."""
    estimated: bool = False
    """Its tokens are an estimate (the CLI was stopped before it reported them)."""


@dataclass(frozen=True)
class ToolStep:
    """A tool call seen in a stream, with what it returned."""

    call: ToolCall
    output: str
    error: bool


StreamStep = ModelStep | ToolStep


class StreamParser(Protocol):
    """Turns a CLI's output lines into steps."""

    summary: str | None
    failed: bool

    def feed(self, line: str) -> list[StreamStep]:
        """The steps ``line`` completes (often none)."""

    def finish(self) -> list[StreamStep]:
        """The steps still held when the output ends."""


def stream_kind(argv: Sequence[str]) -> StreamKind | None:
    """Which stream the command prints, from its flags; None for plain output."""
    args = list(argv)
    formats = {args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--output-format"}
    formats |= {arg.split("=", 1)[1] for arg in args if arg.startswith("--output-format=")}
    if "stream-json" in formats:
        return "claude"
    if "exec" in args and "--json" in args:
        return "codex"
    return None


def parser_for(kind: StreamKind, prompt_chars: int = 0) -> StreamParser:
    """A fresh parser for one run (``prompt_chars``: the prompt's size, for estimates)."""
    return ClaudeStream() if kind == "claude" else CodexStream(prompt_chars=prompt_chars)


def _json_object(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _anthropic_usage(usage: dict[str, Any]) -> Usage:
    """Anthropic's usage fields as a ``Usage``: cache reads and writes are counted apart from
    ``input_tokens`` there, and summed into ``prompt_tokens`` here."""
    read, written = (
        _int(usage.get("cache_read_input_tokens")),
        _int(usage.get("cache_creation_input_tokens")),
    )
    return Usage(
        prompt_tokens=_int(usage.get("input_tokens")) + read + written,
        completion_tokens=_int(usage.get("output_tokens")),
        cached_tokens=read,
        cache_write_tokens=written,
    )


def _plus(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cached_tokens + b.cached_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
    )


def _text(content: Any) -> str:
    """A content field as text: a string, or the text of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_dict(block).get("text", "")) for block in content)
    return ""


@dataclass
class ClaudeStream:
    """``claude -p --output-format stream-json`` (each line a message of the conversation).

    Claude Code may print one message as several ``assistant`` lines (a block each, the same
    ``message.id``, the usage repeated), so a message is held until a line of another one.
    """

    summary: str | None = None
    failed: bool = False
    _held: dict[str, Any] | None = None
    _blocks: list[dict[str, Any]] = field(default_factory=list)
    _calls: dict[str, ToolCall] = field(default_factory=dict)
    _held_failed: bool = False
    _counted: Usage = field(default_factory=Usage)
    """Tokens the message steps reported so far."""
    _unreported_output: int = 0
    """Output tokens the messages' text and tool inputs suggest beyond their one reported."""
    _totalled: bool = False
    """The ``result`` line came, with the run's totals."""

    def feed(self, line: str) -> list[StreamStep]:
        event = _json_object(line)
        if event is None:
            return []
        kind = event.get("type")
        message = _dict(event.get("message"))
        if kind == "assistant":
            same = self._held is not None and message.get("id") == self._held.get("id")
            steps = [] if same and message.get("id") else self._flush()
            # A failed API call is printed as an assistant message of its own (model
            # ``<synthetic>``, the error as its text): a failed model step, not a reply.
            failed = bool(event.get("isApiErrorMessage")) or message.get("model") == "<synthetic>"
            self._held_failed = self._held_failed or failed
            self._held = message
            self._blocks += [_dict(b) for b in message.get("content") or []]
            return steps
        steps = self._flush()
        if kind == "user":
            steps += self._results(message)
        elif kind == "result":
            result = event.get("result")
            self.summary = result if isinstance(result, str) else self.summary
            steps += self._uncounted(event)
            self._totalled = True
            self.failed = bool(event.get("is_error")) or event.get("subtype") not in (
                None,
                "success",
            )
        return steps

    def finish(self) -> list[StreamStep]:
        """The message still held; for a run killed before its ``result``, an estimate of the
        output its messages' lines did not report (marked estimated)."""
        steps = self._flush()
        if self._totalled or self._unreported_output <= 0:
            return steps
        guess, self._unreported_output = self._unreported_output, 0
        usage = Usage(completion_tokens=guess)
        return [*steps, ModelStep(AssistantReply(usage=usage), estimated=True)]

    def _flush(self) -> list[StreamStep]:
        message, blocks, failed = self._held, self._blocks, self._held_failed
        self._held, self._blocks, self._held_failed = None, [], False
        if message is None:
            return []
        calls = tuple(
            ToolCall(str(b.get("id", "")), str(b.get("name", "")), _dict(b.get("input")))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        for call in calls:
            self._calls[call.id] = call
        reply = AssistantReply(
            text="".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text"),
            tool_calls=calls,
            usage=_anthropic_usage(_dict(message.get("usage"))),
        )
        self._counted = _plus(self._counted, reply.usage)
        if not failed:  # an API error's text is the CLI's, not the model's output
            written = len(reply.text) + sum(len(json.dumps(c.arguments)) for c in calls)
            self._unreported_output += max(0, written // 4 - reply.usage.completion_tokens)
        model = message.get("model")
        if failed:
            return [ModelStep(reply, None, error=reply.text or "API error")]
        return [ModelStep(reply, model if isinstance(model, str) else None)]

    def _uncounted(self, result: dict[str, Any]) -> list[StreamStep]:
        """A model step for the tokens the run's totals hold beyond its message lines.

        Each ``assistant`` line carries the usage of its message's start (one output token so
        far), and the CLI's side requests (a session title, a quota check) print no line at
        all; the closing ``result`` holds the run's totals per model (``modelUsage``, with the
        side requests) or its main model's (``usage``).
        """
        total = Usage()
        per_model = _dict(result.get("modelUsage"))
        for counts in per_model.values():
            counts = _dict(counts)
            read, written = (
                _int(counts.get("cacheReadInputTokens")),
                _int(counts.get("cacheCreationInputTokens")),
            )
            total = _plus(
                total,
                Usage(
                    prompt_tokens=_int(counts.get("inputTokens")) + read + written,
                    completion_tokens=_int(counts.get("outputTokens")),
                    cached_tokens=read,
                    cache_write_tokens=written,
                ),
            )
        if not per_model:
            total = _anthropic_usage(_dict(result.get("usage")))
        counted = self._counted
        missing = Usage(
            prompt_tokens=max(0, total.prompt_tokens - counted.prompt_tokens),
            completion_tokens=max(0, total.completion_tokens - counted.completion_tokens),
            cached_tokens=max(0, total.cached_tokens - counted.cached_tokens),
            cache_write_tokens=max(0, total.cache_write_tokens - counted.cache_write_tokens),
        )
        if missing.total == 0:
            return []
        self._counted = _plus(counted, missing)
        return [ModelStep(AssistantReply(usage=missing))]

    def _results(self, message: dict[str, Any]) -> list[StreamStep]:
        steps: list[StreamStep] = []
        for block in message.get("content") or []:
            block = _dict(block)
            if block.get("type") != "tool_result":
                continue
            ident = str(block.get("tool_use_id", ""))
            call = self._calls.pop(ident, ToolCall(ident, "unknown"))
            output = _text(block.get("content"))
            steps.append(ToolStep(call, output, bool(block.get("is_error"))))
        return steps


CODEX_OVERHEAD_TOKENS = 8_000
"""Tokens of Codex's own instructions and tool schemas in every request (0.171.0 sends about
this many), for the estimate of a run stopped before its counts."""
CHARS_PER_TOKEN = 4


@dataclass
class CodexStream:
    """``codex exec --json`` (thread, turn and item events).

    Codex reports tokens only when the turn completes. A run stopped before that (a halt, a
    dollar budget, ``timeout_s``) would cost nothing on record, so ``finish`` estimates it: one
    model call per completed item, each resending the prompt and what the run printed so far.
    """

    summary: str | None = None
    failed: bool = False
    prompt_chars: int = 0
    _turn_counted: bool = False
    _calls: int = 0
    _context_chars: int = 0
    _estimate: Usage = field(default_factory=Usage)

    def feed(self, line: str) -> list[StreamStep]:
        event = _json_object(line)
        if event is None:
            return []
        kind = event.get("type")
        if kind == "item.completed":
            item = _dict(event.get("item"))
            self._estimate_call(item)
            return self._item(item)
        if kind == "turn.started":
            self._turn_counted = False
        if kind == "turn.completed":
            self._turn_counted, self._estimate, self._calls = True, Usage(), 0
            usage = _dict(event.get("usage"))
            reply = AssistantReply(
                text=self.summary or "",
                usage=Usage(
                    prompt_tokens=_int(usage.get("input_tokens")),
                    completion_tokens=_int(usage.get("output_tokens")),
                    cached_tokens=_int(usage.get("cached_input_tokens")),
                ),
            )
            return [ModelStep(reply)]
        if kind == "turn.failed":
            self.failed = True
            message = str(_dict(event.get("error")).get("message", "turn failed"))
            return [ModelStep(AssistantReply(text=message), error=message)]
        return []

    def finish(self) -> list[StreamStep]:
        """The estimate of the calls since the last count, when the turn never completed."""
        if self._calls == 0 or self._turn_counted:
            return []
        usage, self._estimate, self._calls = self._estimate, Usage(), 0
        return [ModelStep(AssistantReply(text=self.summary or "", usage=usage), estimated=True)]

    def _estimate_call(self, item: dict[str, Any]) -> None:
        """Add one model call that produced ``item`` to the running estimate."""
        kind = str(item.get("type") or item.get("item_type") or "")
        if kind not in CODEX_TOOL_ITEMS and kind not in ("agent_message", "reasoning"):
            return
        written = len(json.dumps(item, default=str))
        sent = self.prompt_chars + self._context_chars
        self._calls += 1
        self._context_chars += written
        self._estimate = _plus(
            self._estimate,
            Usage(
                prompt_tokens=CODEX_OVERHEAD_TOKENS + sent // CHARS_PER_TOKEN,
                completion_tokens=max(1, written // CHARS_PER_TOKEN),
            ),
        )

    def _item(self, item: dict[str, Any]) -> list[StreamStep]:
        # Codex spelled the item's type ``item_type`` in its first JSON stream.
        kind = str(item.get("type") or item.get("item_type") or "")
        if kind in ("agent_message", "assistant_message"):
            self.summary = str(item.get("text", ""))
            return []
        if kind not in CODEX_TOOL_ITEMS:
            return []
        status = item.get("status")
        if kind == "command_execution":
            exit_code = item.get("exit_code")
            error = status == "failed" or (isinstance(exit_code, int) and exit_code != 0)
            call = ToolCall(str(item.get("id", "")), kind, {"command": item.get("command")})
            return [ToolStep(call, str(item.get("aggregated_output", "")), error)]
        name = kind
        if kind == "mcp_tool_call":
            name = f"{item.get('server', '')}.{item.get('tool', '')}"
        arguments = {k: v for k, v in item.items() if k not in ("id", "type", "status", "result")}
        output = json.dumps(item.get("result", status), sort_keys=True, default=str)
        return [
            ToolStep(ToolCall(str(item.get("id", "")), name, arguments), output, status == "failed")
        ]
