"""Reply bodies both fake model servers send: an OpenAI chat completion, an Anthropic message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def chat_completion(
    serial: int,
    model: str,
    text: str,
    calls: Sequence[tuple[str, str]],
    usage: tuple[int, int],
    usage_details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A completion saying ``text`` and calling ``calls`` (name, arguments as JSON text), with
    ``usage`` (prompt, completion tokens) and any extra usage fields."""
    tool_calls = [
        {
            "id": f"call_{serial}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for index, (name, arguments) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt, completion = usage
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **(usage_details or {}),
        },
    }


def anthropic_message(
    serial: int,
    model: str,
    text: str,
    calls: Sequence[tuple[str, Any]],
    usage: Mapping[str, int],
) -> dict[str, Any]:
    """A message saying ``text`` and using the tools ``calls`` (name, input), with ``usage``
    (``input_tokens``, ``output_tokens`` and any cache counts)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for index, (name, arguments) in enumerate(calls):
        use_id = f"toolu_{serial}_{index}"
        content.append({"type": "tool_use", "id": use_id, "name": name, "input": arguments})
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": dict(usage),
    }
