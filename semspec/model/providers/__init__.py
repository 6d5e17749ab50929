"""LLM providers behind one ``ChatProvider`` protocol: OpenAI-compatible HTTP and Anthropic."""

from semspec.model.providers.types import (
    AssistantReply,
    ChatMessage,
    ChatProvider,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = ["AssistantReply", "ChatMessage", "ChatProvider", "ToolCall", "ToolSpec", "Usage"]
