"""Anthropic messages API with tool use, translated to and from the neutral chat vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anthropic

from semspec.model.providers.failures import sdk_errors
from semspec.model.providers.reported_usage import token_count
from semspec.model.providers.types import AssistantReply, ChatMessage, ToolCall, ToolSpec, Usage

DEFAULT_MAX_TOKENS = 4096


def _assistant_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for tc in message.tool_calls:
        blocks.append({"type": "tool_use", "id": tc.id, "name": tc.name, "input": tc.arguments})
    return blocks


def to_anthropic(messages: Sequence[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
    """Split out the system prompt and fold tool results into user turns, as the API wants."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            # Consecutive tool results belong in one user turn.
            if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            wire.append({"role": "assistant", "content": _assistant_blocks(message)})
        else:
            wire.append({"role": "user", "content": message.content})
    return system, wire


class AnthropicChatProvider:
    """Claude models through the ``anthropic`` SDK, without SDK retries."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        temperature: float | None = None,
        max_output_tokens: int = DEFAULT_MAX_TOKENS,
        name: str = "anthropic",
    ) -> None:
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        # Temporal owns retries (see STYLE.md); the SDK must not retry underneath it.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
    ) -> AssistantReply:
        """Send one messages request and translate the reply or the failure."""
        system, wire = to_anthropic(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": max_tokens or self.max_output_tokens,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        with sdk_errors(self.name, anthropic, "message"):
            response = await self._client.messages.create(**kwargs)
        return self._reply(response)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client and its connections."""
        await self._client.close()

    def _reply(self, response: Any) -> AssistantReply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in getattr(response, "content", None) or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                error = None if isinstance(block.input, dict) else "input must be a JSON object"
                calls.append(ToolCall(block.id, block.name, dict(arguments), error))
        return AssistantReply(
            text="\n".join(texts),
            tool_calls=tuple(calls),
            usage=_usage(getattr(response, "usage", None)),
            finish_reason=getattr(response, "stop_reason", None),
        )


def _usage(usage: Any) -> Usage:
    """Anthropic reports cache reads and writes apart from ``input_tokens``; ``Usage`` wants
    them inside the prompt total, so each input token is counted once."""
    read = token_count(usage, "cache_read_input_tokens")
    written = token_count(usage, "cache_creation_input_tokens")
    return Usage(
        prompt_tokens=token_count(usage, "input_tokens") + read + written,
        completion_tokens=token_count(usage, "output_tokens"),
        cached_tokens=read,
        cache_write_tokens=written,
    )
