"""A fake LLM HTTP server on loopback that plays a scripted sequence of replies.

It speaks the OpenAI chat-completions API (``POST /v1/chat/completions``, ``GET /v1/models``) and
the Anthropic messages API (``POST /v1/messages``), so both SDKs can be tested over real HTTP.
Each reply can be text, tool calls, a malformed JSON body, an HTTP error (with ``Retry-After``)
or a slow reply; every request is recorded for assertions.

With ``routes`` the server keeps one reply queue per route and a router picks the queue of each
request (``FakeLLMServer.for_roles`` routes by the agent's system prompt), so a developer and a
reviewer sharing one endpoint each get their own script however their calls interleave.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tests.fakes.loopback_http import FakeHTTPServer, JsonHandler, LoopbackServer
from tests.fakes.wire_bodies import anthropic_message, chat_completion


@dataclass(frozen=True)
class FakeReply:
    """One scripted reply; the helpers below build the common shapes."""

    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    """(tool name, arguments); a ``str`` argument is sent verbatim (e.g. malformed JSON)."""
    status: int = 200
    error_message: str = ""
    retry_after: float | None = None
    raw_body: str | None = None
    """Sent verbatim instead of a well-formed reply body."""
    delay_s: float = 0.0
    usage: tuple[int, int] = (10, 5)
    """(input tokens, output tokens); the input count includes the cached ones below."""
    cached_tokens: int = 0
    """Part of the input read from the prompt cache."""
    cache_write_tokens: int = 0
    """Part of the input written to the prompt cache (Anthropic only; OpenAI has no such field)."""


def text(content: str, *, usage: tuple[int, int] = (10, 5)) -> FakeReply:
    """A plain assistant text reply."""
    return FakeReply(text=content, usage=usage)


def call(name: str, arguments: dict[str, Any] | str, *more: tuple[str, Any]) -> FakeReply:
    """A reply with one tool call (or several: pass extra ``(name, arguments)`` pairs)."""
    return FakeReply(tool_calls=((name, arguments), *more))


def malformed_body() -> FakeReply:
    """A 200 reply whose body is not JSON."""
    return FakeReply(raw_body='{"choices": [ this is not json')


def http_error(status: int, message: str = "error", retry_after: float | None = None) -> FakeReply:
    """An HTTP error reply, optionally with a ``Retry-After`` header."""
    return FakeReply(status=status, error_message=message, retry_after=retry_after)


def slow(reply: FakeReply, delay_s: float) -> FakeReply:
    """``reply`` sent after ``delay_s`` seconds."""
    return replace(reply, delay_s=delay_s)


def cached(reply: FakeReply, read: int, written: int = 0) -> FakeReply:
    """``reply`` whose input tokens include ``read`` cache reads and ``written`` cache writes."""
    return replace(reply, cached_tokens=read, cache_write_tokens=written)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    route: str = ""
    """The reply queue that answered it (``""`` for a server without routes)."""

    def header(self, name: str) -> str | None:
        """A request header by case-insensitive name (HTTP clients differ in case)."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


Responder = Callable[["RecordedRequest"], FakeReply]
"""A reply computed from the request (e.g. to echo a pointer id the agent was shown)."""

Router = Callable[["RecordedRequest"], str]
"""Names the reply queue of a request; an unknown name gets an HTTP 400."""

Step = FakeReply | Responder

ROLE_MARKERS = {"developer": "the developer agent", "reviewer": "the reviewer agent"}
"""Phrases of semspec's system prompts (``You are the developer agent of semspec``)."""


def system_text(body: Any) -> str:
    """The system prompt of an OpenAI or Anthropic request body (empty when there is none)."""
    if not isinstance(body, dict):
        return ""
    system: Any = body.get("system")  # Anthropic
    if system is None:
        messages = body.get("messages") or []
        system = next(
            (
                m.get("content")
                for m in messages
                if isinstance(m, dict) and m.get("role") == "system"
            ),
            "",
        )
    if isinstance(system, list):  # content blocks
        return "".join(str(part.get("text", "")) for part in system if isinstance(part, dict))
    return str(system or "")


def system_prompt_router(markers: Mapping[str, str]) -> Router:
    """A router choosing the first route whose marker occurs in the request's system prompt."""

    def route(request: RecordedRequest) -> str:
        prompt = system_text(request.body)
        return next((name for name, marker in markers.items() if marker in prompt), "")

    return route


@dataclass
class _Script:
    queues: dict[str, list[Step]]
    router: Router | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count[int] = field(default_factory=itertools.count)

    def next_reply(self, request: RecordedRequest) -> FakeReply:
        route = self.router(request) if self.router is not None else ""
        request = replace(request, route=route)
        with self.lock:
            self.requests.append(request)
            queue = self.queues.get(route)
            step = queue.pop(0) if queue else None
        if queue is None:
            # A 400 is not retried, so a misrouted request fails a test at once.
            return http_error(400, f"fake LLM has no route {route!r} for this request")
        if step is None:
            return http_error(500, f"fake LLM script exhausted (route {route!r})")
        return step if isinstance(step, FakeReply) else step(request)


def _openai_body(reply: FakeReply, model: str, serial: int) -> dict[str, Any]:
    calls = [(n, a if isinstance(a, str) else json.dumps(a)) for n, a in reply.tool_calls]
    details = {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
    return chat_completion(serial, model, reply.text, calls, reply.usage, details)


def _anthropic_body(reply: FakeReply, model: str, serial: int) -> dict[str, Any]:
    calls = [(n, a if isinstance(a, dict) else {"_raw": a}) for n, a in reply.tool_calls]
    # Anthropic's input_tokens leaves out the cache reads and writes, reported apart.
    usage = {
        "input_tokens": reply.usage[0] - reply.cached_tokens - reply.cache_write_tokens,
        "output_tokens": reply.usage[1],
        "cache_read_input_tokens": reply.cached_tokens,
        "cache_creation_input_tokens": reply.cache_write_tokens,
    }
    return anthropic_message(serial, model, reply.text, calls, usage)


class _Handler(JsonHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.route.endswith("/models"):
            self.send_models(self.server.models)
        else:
            self.send_no_route()

    def do_POST(self) -> None:
        body = self.read_body()
        recorded = RecordedRequest("POST", self.path, dict(self.headers.items()), body)
        script = self.server.script
        reply = script.next_reply(recorded)
        serial = next(script.ids)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            headers = {}
            if reply.retry_after is not None:
                headers["Retry-After"] = f"{reply.retry_after:g}"
            error = {"type": "error", "error": {"message": reply.error_message, "type": "fake"}}
            self.send_json(reply.status, error, headers)
            return
        if reply.raw_body is not None:
            self.send_text(200, reply.raw_body)
            return
        model = body.get("model", "fake") if isinstance(body, dict) else "fake"
        if self.route.endswith("/messages"):
            self.send_json(200, _anthropic_body(reply, model, serial))
        elif self.route.endswith("/chat/completions"):
            self.send_json(200, _openai_body(reply, model, serial))
        else:
            self.send_no_route()


class _Server(FakeHTTPServer):
    script: _Script
    models: Sequence[str]


class FakeLLMServer(LoopbackServer):
    """Context manager running the fake server on 127.0.0.1 with a free port."""

    def __init__(
        self,
        replies: Sequence[Step] = (),
        models: Sequence[str] = ("fake-model",),
        *,
        routes: Mapping[str, Sequence[Step]] | None = None,
        router: Router | None = None,
    ) -> None:
        if routes is not None:
            if replies or router is None:
                raise ValueError("routes need a router and replace the single reply list")
            queues = {name: list(steps) for name, steps in routes.items()}
        else:
            queues = {"": list(replies)}
        super().__init__()
        self._script = _Script(queues, router)
        self._models = list(models)

    @classmethod
    def for_roles(
        cls,
        *,
        developer: Sequence[Step] = (),
        reviewer: Sequence[Step] = (),
        models: Sequence[str] = ("fake-model",),
    ) -> FakeLLMServer:
        """A server answering semspec's developer and reviewer from separate scripts."""
        return cls(
            models=models,
            routes={"developer": developer, "reviewer": reviewer},
            router=system_prompt_router(ROLE_MARKERS),
        )

    def last_messages(self, index: int = -1, route: str | None = None) -> list[dict[str, Any]]:
        """The ``messages`` of a recorded chat request (default: the latest, of any route)."""
        requests = self.requests if route is None else self.requests_for(route)
        messages: list[dict[str, Any]] = requests[index].body["messages"]
        return messages

    @property
    def requests(self) -> list[RecordedRequest]:
        """Requests received so far, oldest first."""
        with self._script.lock:
            return list(self._script.requests)

    def requests_for(self, route: str) -> list[RecordedRequest]:
        """Requests answered from ``route``'s queue, oldest first."""
        return [r for r in self.requests if r.route == route]

    def remaining(self, route: str = "") -> int:
        """Replies of ``route`` not yet used (a finished scenario has used them all)."""
        with self._script.lock:
            return len(self._script.queues.get(route, []))

    def push(self, *replies: Step, route: str = "") -> None:
        """Append replies to the script (of ``route`` on a routed server)."""
        with self._script.lock:
            self._script.queues.setdefault(route, []).extend(replies)

    def make_server(self) -> FakeHTTPServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.script = self._script
        server.models = self._models
        return server
