"""The provider-neutral chat vocabulary: messages, tool specs, tool calls, usage, replies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for; ``arguments_error`` is set when its JSON was bad."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation in the OpenAI-style role model."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For ``role == "tool"``: the id of the call this message answers."""
    name: str | None = None
    """For ``role == "tool"``: the tool's name."""
    compactable: bool = False
    """Whether the trace compactor may replace the content by a pointer (tool output only)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: name, description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Tokens the provider reported for one call.

    ``prompt_tokens`` counts every input token, cached ones included (providers that report
    cache reads and writes apart, like Anthropic, are summed into it); ``cached_tokens`` and
    ``cache_write_tokens`` say which part of it was read from or written to the prompt cache,
    so each input token is priced once, at its own price (``semspec.model.pricing``).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """The part of ``prompt_tokens`` read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """The part of ``prompt_tokens`` written to the prompt cache (billed above plain input)."""

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class AssistantReply:
    """The assistant's answer to one call: text and/or tool calls, with token usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def as_message(self) -> ChatMessage:
        """The reply as a message to append to the conversation."""
        return ChatMessage(role="assistant", content=self.text, tool_calls=self.tool_calls)


class ChatProvider(Protocol):
    """A chat model: messages and tool specs in, one assistant reply out.

    Implementations raise ``semspec.core.errors.ProviderError`` on failure and never retry on their
    own (Temporal retries the activity).
    """

    name: str

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
    ) -> AssistantReply: ...

    async def aclose(self) -> None:
        """Close the HTTP client: one left to the garbage collector closes (and warns) at
        whatever moment it is collected, on whichever event loop runs then."""
