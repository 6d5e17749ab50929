"""A fake model server for the real agent CLIs, on 127.0.0.1, in the three wire formats they use.

* Anthropic Messages (``POST /v1/messages``), streamed as server-sent events the way the API
  streams them (``message_start`` with the input tokens and one output token so far, content
  blocks with text and ``input_json_delta`` deltas, ``message_delta`` with the final output
  tokens), or as one JSON body; ``/v1/messages/count_tokens`` too. Claude Code uses it through
  ``ANTHROPIC_BASE_URL``.
* OpenAI Responses (``POST /v1/responses``) streamed as events (``response.created``,
  ``response.output_item.done`` per item, ``response.completed`` with the usage). Codex CLI
  uses it through a provider with ``wire_api = "responses"``.
* OpenAI chat completions (``POST /v1/chat/completions``), one JSON body or streamed chunks
  (Aider and mini-swe-agent through litellm's ``OPENAI_API_BASE``).

A request that offers tools is a turn of the agent and gets the script's next reply; one
without tools is a side request of the CLI (Claude Code's session title, say) and gets a short
text, counted apart. Every chat completion is a turn (Aider offers no tools). Replies carry
tool calls by name in the format of the request. Every request is recorded. Only the standard
library: it runs inside the test process.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback_http import FakeHTTPServer, JsonHandler, LoopbackServer
from tests.fakes.wire_bodies import anthropic_message, chat_completion


@dataclass(frozen=True)
class AgentReply:
    """One scripted model reply: text and tool calls ``(name, arguments)``, with its tokens."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    usage: tuple[int, int] = (100, 20)
    """(input tokens, output tokens) reported for the call."""


def says(text: str, usage: tuple[int, int] = (100, 20)) -> AgentReply:
    return AgentReply(text=text, usage=usage)


def calls(name: str, arguments: dict[str, Any], usage: tuple[int, int] = (100, 20)) -> AgentReply:
    return AgentReply(calls=((name, arguments),), usage=usage)


Step = AgentReply | Callable[[dict[str, Any]], AgentReply]
"""A reply, or one computed from the request body."""


def slowly(reply: AgentReply, seconds: float) -> Step:
    """``reply``, given after ``seconds`` (a real model takes that long, and longer)."""

    def answer(body: dict[str, Any]) -> AgentReply:
        time.sleep(seconds)
        return reply

    return answer


SIDE_REPLY = AgentReply(text="Fake session title", usage=(30, 7))


@dataclass(frozen=True)
class Recorded:
    path: str
    body: Any
    turn: bool
    """Whether the request offered tools (a turn of the agent, answered from the script)."""


@dataclass
class _State:
    script: list[Step]
    after: Step
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=itertools.count)

    def reply(self, path: str, body: Any) -> tuple[AgentReply, int]:
        # Aider sends no tools (it edits through text): every chat completion is a turn.
        turn = path.endswith("/chat/completions") or (
            isinstance(body, dict) and bool(body.get("tools"))
        )
        with self.lock:
            self.requests.append(Recorded(path, body, turn))
            serial = next(self.ids)
            step = (self.script.pop(0) if self.script else self.after) if turn else SIDE_REPLY
        return (step if isinstance(step, AgentReply) else step(body)), serial


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_events(reply: AgentReply, model: str, serial: int) -> list[bytes]:
    """The SSE events of one streamed Anthropic message."""
    prompt, completion = reply.usage
    start: dict[str, Any] = {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # As the API does: the output count so far (1) here, the final one in message_delta.
        "usage": {
            "input_tokens": prompt,
            "output_tokens": 1,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    }
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    blocks: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    if reply.text:
        blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": reply.text}))
    for index, (name, arguments) in enumerate(reply.calls):
        use: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{serial}_{index}",
            "name": name,
            "input": {},
        }
        blocks.append((use, {"type": "input_json_delta", "partial_json": json.dumps(arguments)}))
    for index, (block, delta) in enumerate(blocks):
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        if delta is not None:
            events.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if reply.calls else "end_turn"
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": completion},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def anthropic_body(reply: AgentReply, model: str, serial: int) -> dict[str, Any]:
    usage = {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]}
    return anthropic_message(serial, model, reply.text, reply.calls, usage)


def responses_events(reply: AgentReply, model: str, serial: int) -> list[bytes]:
    """The SSE events of one streamed OpenAI Responses call."""
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for index, (name, arguments) in enumerate(reply.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{serial}_{index}",
                "call_id": f"call_{serial}_{index}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        )
    response: dict[str, Any] = {
        "id": f"resp_{serial}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    events = [_sse("response.created", {"type": "response.created", "response": response})]
    for index, item in enumerate(items):
        events.append(
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        )
        events.append(
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    prompt, completion = reply.usage
    done = {
        **response,
        "status": "completed",
        "output": items,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }
    events.append(_sse("response.completed", {"type": "response.completed", "response": done}))
    return events


def chat_body(reply: AgentReply, model: str, serial: int) -> dict[str, Any]:
    calls = [(name, json.dumps(arguments)) for name, arguments in reply.calls]
    return chat_completion(serial, model, reply.text, calls, reply.usage)


def chat_chunks(reply: AgentReply, model: str, serial: int) -> list[bytes]:
    """A chat completion streamed as one content chunk, one tool-call chunk, a usage chunk."""
    body = chat_body(reply, model, serial)
    message = body["choices"][0]["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": 0, "model": model}
    finish = body["choices"][0]["finish_reason"]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": body["usage"]},
    ]
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


class _Handler(JsonHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _stream(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.route.endswith("/models"):
            self.send_models(["fake-model"])
        else:
            self.send_no_route()

    def do_POST(self) -> None:
        body = self.read_body()
        path = self.route
        if path.endswith("/count_tokens"):
            self.send_json(200, {"input_tokens": 100})
            return
        state = self.server.state
        reply, serial = state.reply(path, body)
        model = str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"
        streamed = isinstance(body, dict) and bool(body.get("stream"))
        if path.endswith("/messages"):
            if streamed:
                self._stream(anthropic_events(reply, model, serial))
            else:
                self.send_json(200, anthropic_body(reply, model, serial))
        elif path.endswith("/responses"):
            self._stream(responses_events(reply, model, serial))
        elif path.endswith("/chat/completions"):
            if streamed:
                self._stream(chat_chunks(reply, model, serial))
            else:
                self.send_json(200, chat_body(reply, model, serial))
        else:
            self.send_no_route()


class _Server(FakeHTTPServer):
    state: _State


class AgentModelServer(LoopbackServer):
    """The fake server as a context manager; ``script`` answers the agent's turns in order,
    then ``after`` answers every further turn (by default: text saying it is done)."""

    def __init__(self, script: Sequence[Step] = (), after: Step = says("Done.")) -> None:
        super().__init__()
        self._state = _State(list(script), after)

    @property
    def requests(self) -> list[Recorded]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def turns(self) -> list[Recorded]:
        """The requests that were turns of the agent."""
        return [r for r in self.requests if r.turn]

    def play(self, script: Sequence[Step], after: Step = says("Done.")) -> None:
        """Answer the next turns with ``script``, then ``after`` (for a server shared by tests)."""
        with self._state.lock:
            self._state.script = list(script)
            self._state.after = after

    def remaining(self) -> int:
        with self._state.lock:
            return len(self._state.script)

    def make_server(self) -> FakeHTTPServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = self._state
        return server
