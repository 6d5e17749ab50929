"""LLM providers behind one ``ChatProvider`` protocol: OpenAI-compatible HTTP and Anthropic."""

from model.providers.types import (
    AssistantReply,
    ChatMessage,
    ChatProvider,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = ["AssistantReply", "ChatMessage", "ChatProvider", "ToolCall", "ToolSpec", "Usage"]
