"""OpenAI-style chat logs as step events: what the live agent would have published.

A log is a JSON list of messages ``{role, content, tool_calls}``, or an object holding them
under ``messages`` (mini-swe-agent's ``.traj.json``, most gateways' logs). Each assistant message
is a model step; each tool call it makes becomes a tool step once its answer (a ``tool``
message with the call's id) appears. An assistant message without tool calls whose text holds
one fenced shell block (mini-swe-agent's text protocol) is a ``bash`` call answered by the next
user message. The whole log is one turn of one agent.

Outputs are hashed as the live agents hash them (``semspec.vocabulary.step_text``): timings,
timestamps and memory addresses are blanked, so a test run failing the same way twice hashes the
same even though it took another 0.02 s.

What counts as a failure: a ``<returncode>``/``exit code`` other than 0, a traceback, an output
starting with ``Error``, a ``command not found``, a tool message with ``is_error: true``. An
assistant message with an ``error`` field is a failed model call; one that mentions the
context window (``context_length_exceeded``, ``maximum context length``, ``prompt is too
long``) is a context-window error.

Tokens come from the message's ``usage`` (or ``extra.response.usage``); without them they are
counted (``semspec.model.tokens``): the prompt is every message before the call, the completion
the assistant's message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from semspec.model.pricing import Price
from semspec.model.providers.types import Usage
from semspec.model.tokens import MESSAGE_OVERHEAD, count_tokens
from semspec.processors.risk_monitor.replay.runs import MAX_RUN_STEPS, RecordedRun, ReplayFileError
from semspec.vocabulary.event_payloads import StepPayload
from semspec.vocabulary.events import MonitorEvent, monitor_event, validation_summary
from semspec.vocabulary.fenced_blocks import shell_action
from semspec.vocabulary.step_text import is_wait_call, output_digest, text_digest

Pricer = Callable[[str], Price | None]
"""The registry's price of a model id, or None when it has none."""

_EXIT = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|exit(?:ed with)? code:?\s*(-?\d+)|"
    r"\"returncode\":\s*(-?\d+)",
    re.IGNORECASE,
)
_FAILED_START = re.compile(r"^\s*(error\b|fatal\b|traceback \(most recent call last\))", re.I)
_CONTEXT_WINDOW = re.compile(
    r"context_length_exceeded|maximum context length|context window|prompt is too long", re.I
)


@dataclass
class _Call:
    """A tool call waiting for its answer."""

    call_id: str | None
    tool: str
    action: str
    wait: bool


class _Steps:
    """The run's steps as they are derived, numbered from 1."""

    def __init__(self, name: str, model: str | None, pricer: Pricer) -> None:
        self.name = name
        self.model = model
        self.pricer = pricer
        self.payloads: list[StepPayload] = []
        self.priced = True

    def add(self, **fields: Any) -> None:
        if len(self.payloads) >= MAX_RUN_STEPS:
            raise ReplayFileError(self.name, f"more than {MAX_RUN_STEPS} steps")
        fields.setdefault("tool", None)
        fields.setdefault("error", False)
        self.payloads.append(StepPayload(role="developer", step=len(self.payloads) + 1, **fields))

    def model_call(
        self, message: dict[str, Any], text: str, calls: list[_Call], prompt: int
    ) -> None:
        usage = _usage(message) or Usage(
            prompt_tokens=prompt, completion_tokens=_tokens(text, calls)
        )
        model = message.get("model") if isinstance(message.get("model"), str) else self.model
        price = self.pricer(model) if model else None
        self.priced = self.priced and price is not None
        error = message.get("error")
        failure = json.dumps(error, default=str) if error is not None else ""
        asked = json.dumps([[c.tool, c.action] for c in calls])
        self.add(
            kind="model",
            action_hash=text_digest(asked) if calls else "",
            observation_hash=output_digest(text or failure),
            error=error is not None,
            error_kind="context_window" if _CONTEXT_WINDOW.search(failure) else None,
            model=model,
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            cached_tokens=min(usage.cached_tokens, usage.prompt_tokens),
            cost_usd=price.cost_usd(usage) if price else None,
        )

    def tool_call(self, call: _Call, output: str, failed: bool) -> None:
        self.add(
            kind="tool",
            tool=call.tool,
            action_hash=text_digest(json.dumps([call.tool, call.action])),
            observation_hash=output_digest(output),
            error=failed or _looks_failed(output),
            wait=call.wait,
        )


def chat_run(name: str, document: Any, pricer: Pricer, fmt: str = "chat") -> RecordedRun:
    """The run a chat log records (``fmt`` names the format it came in); raises
    ``ReplayFileError`` for a log it cannot read."""
    messages = document.get("messages") if isinstance(document, dict) else document
    if not isinstance(messages, list) or not messages:
        raise ReplayFileError(name, "messages: expected a non-empty list of chat messages")
    steps = _Steps(name, _run_model(document), pricer)
    waiting: list[_Call] = []
    prompt = 0  # tokens of the conversation so far
    for number, message in enumerate(messages, 1):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ReplayFileError(name, f"messages[{number - 1}]: expected an object with a role")
        role, text = message["role"], _text(message.get("content"))
        if role == "assistant":
            calls = _tool_calls(name, number, message, text)
            steps.model_call(message, text, calls, prompt)
            waiting = calls
        elif role == "tool" and waiting:
            call = _answered(waiting, message.get("tool_call_id"))
            steps.tool_call(call, text, message.get("is_error") is True)
        elif role == "user" and waiting and waiting[0].call_id is None:
            steps.tool_call(waiting.pop(0), text, failed=False)
        prompt += count_tokens(text) + MESSAGE_OVERHEAD
    events = [_event(name, steps.payloads[i], i) for i in range(len(steps.payloads))]
    total = _run_cost(document)
    dollars_from = "registry" if steps.priced else ("run total" if total is not None else None)
    if dollars_from == "run total" and total is not None:
        events = _shared_out(events, total)
    return RecordedRun(name=name, format=fmt, events=events, dollars_from=dollars_from)


def _event(name: str, payload: StepPayload, index: int) -> MonitorEvent:
    try:
        return monitor_event(
            "step", payload, event_id=f"{name}#{index + 1}", task_id=name, run_id="", iteration=1
        )
    except ValidationError as exc:  # a derived field out of its range, e.g. a negative count
        raise ReplayFileError(name, validation_summary(exc)) from None


def _tool_calls(name: str, number: int, message: dict[str, Any], text: str) -> list[_Call]:
    raw = message.get("tool_calls")
    if raw is None:
        command = shell_action(text)
        if command is None:
            return []  # no action, or two: the agent answers with a format error
        return [_Call(None, "bash", command, is_wait_call({"command": command}))]
    if not isinstance(raw, list):
        raise ReplayFileError(name, f"messages[{number - 1}].tool_calls: expected a list")
    calls = []
    for call in raw:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            where = f"messages[{number - 1}].tool_calls"
            raise ReplayFileError(name, f"{where}: expected {{id, function: {{name, arguments}}}}")
        action = _arguments(function.get("arguments"))
        wait = is_wait_call(action)
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        calls.append(_Call(call_id, function["name"], json.dumps(action, sort_keys=True), wait))
    return calls


def _arguments(raw: Any) -> Any:
    """Arguments as data: a JSON string is parsed, so key order and spacing do not matter."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return raw
    return raw


def _answered(waiting: list[_Call], call_id: Any) -> _Call:
    """The waiting call a tool message answers: by its id, else the oldest."""
    for position, call in enumerate(waiting):
        if call.call_id == call_id:
            return waiting.pop(position)
    return waiting.pop(0)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _tokens(text: str, calls: list[_Call]) -> int:
    return count_tokens(text + "".join(c.tool + c.action for c in calls)) + MESSAGE_OVERHEAD


def _usage(message: dict[str, Any]) -> Usage | None:
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    raw = message.get("usage") or (response.get("usage") if isinstance(response, dict) else None)
    if not isinstance(raw, dict):
        return None
    prompt = _count(raw.get("prompt_tokens", raw.get("input_tokens")))
    completion = _count(raw.get("completion_tokens", raw.get("output_tokens")))
    details = raw.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    if prompt is None or completion is None:
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached or 0)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _run_model(document: Any) -> str | None:
    """The model a log names for the whole run (mini-swe-agent: ``info.config.model``)."""
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("model"), str):
        return str(document["model"])
    found = _path(document, "info", "config", "model", "model_name")
    return found if isinstance(found, str) else None


def _run_cost(document: Any) -> float | None:
    """A total the log states for the run (mini-swe-agent: ``info.model_stats.instance_cost``)."""
    found = _path(document, "info", "model_stats", "instance_cost")
    if isinstance(found, int | float) and not isinstance(found, bool):
        total = float(found)
        return total if math.isfinite(total) and total >= 0 else None
    return None


def _path(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _shared_out(events: list[MonitorEvent], total: float) -> list[MonitorEvent]:
    """Each model step's share of a run total, by its tokens."""
    tokens = [_step_tokens(e) for e in events]
    whole = sum(tokens) or 1
    return [
        e.model_copy(update={"data": e.data.model_copy(update={"cost_usd": total * t / whole})})
        if e.kind == "step" and e.data.kind == "model"
        else e
        for e, t in zip(events, tokens, strict=True)
    ]


def _step_tokens(event: MonitorEvent) -> int:
    return event.data.input_tokens + event.data.output_tokens if event.kind == "step" else 0


def _looks_failed(output: str) -> bool:
    for match in _EXIT.finditer(output):
        code = next(group for group in match.groups() if group is not None)
        if int(code) != 0:
            return True
    return bool(_FAILED_START.match(output)) or "command not found" in output
