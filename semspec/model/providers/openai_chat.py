"""OpenAI-compatible chat completions with tool calls (OpenAI, vLLM, Ollama, llama.cpp)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from semspec.core.errors import ProviderError
from semspec.model.providers.failures import sdk_errors, transport_error
from semspec.model.providers.reported_usage import token_count
from semspec.model.providers.types import AssistantReply, ChatMessage, ToolCall, ToolSpec, Usage

# Local servers (Ollama, vLLM, llama.cpp) accept any key; the SDK insists on one.
_NO_KEY = "no-key"


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
            }
            for tc in message.tool_calls
        ]
    return wire


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def parse_arguments(call_id: str, name: str, raw: str | None) -> ToolCall:
    """A ``ToolCall`` from raw JSON arguments; bad JSON is kept as ``arguments_error``."""
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, {}, f"arguments are not valid JSON: {exc.msg}")
    if not isinstance(parsed, dict):
        return ToolCall(call_id, name, {}, "arguments must be a JSON object")
    return ToolCall(call_id, name, parsed)


class OpenAIChatProvider:
    """Chat completions against any OpenAI-compatible base URL, without SDK retries."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        temperature: float | None = None,
        name: str = "openai",
    ) -> None:
        self.name = name
        self.model = model
        self.temperature = temperature
        # Temporal retries the activity; retrying inside it would hide rate limits and
        # stretch the activity past its timeout.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or _NO_KEY,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
        )

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
    ) -> AssistantReply:
        """Send one chat-completions request and translate the reply or the failure."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
        }
        if tools:
            kwargs["tools"] = [_wire_tool(t) for t in tools]
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        with sdk_errors(self.name, openai, "completion"):
            response = await self._client.chat.completions.create(**kwargs)
        return self._reply(response)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client and its connections."""
        await self._client.close()

    def _reply(self, response: Any) -> AssistantReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise transport_error(self.name, "reply has no choices")
        message = choices[0].message
        calls = tuple(
            parse_arguments(tc.id, tc.function.name, tc.function.arguments)
            for tc in (message.tool_calls or [])
            if getattr(tc, "function", None) is not None
        )
        return AssistantReply(
            text=message.content or "",
            tool_calls=calls,
            usage=_usage(getattr(response, "usage", None)),
            finish_reason=choices[0].finish_reason,
        )


def _usage(usage: Any) -> Usage:
    """OpenAI counts cache reads inside ``prompt_tokens`` and names them in its details."""
    prompt = token_count(usage, "prompt_tokens")
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=token_count(usage, "completion_tokens"),
        cached_tokens=min(token_count(details, "cached_tokens"), prompt),
    )


__all__ = ["OpenAIChatProvider", "ProviderError", "parse_arguments"]
