"""Claude Code prints a failed API call as a synthetic assistant message: an error step."""

from __future__ import annotations

import json

from semspec.agents.cli_streams import ClaudeStream, ModelStep

API_ERROR = {
    "type": "assistant",
    "isApiErrorMessage": True,
    "message": {
        "id": "e1",
        "model": "<synthetic>",
        "content": [{"type": "text", "text": "API Error: Connection error."}],
        "usage": {"input_tokens": 0, "output_tokens": 0},
    },
}
REPLY = {
    "type": "assistant",
    "message": {"id": "m1", "model": "claude-x", "content": [{"type": "text", "text": "hi"}]},
}


def test_claudes_synthetic_api_error_message_is_an_error_step() -> None:
    stream = ClaudeStream()
    steps = stream.feed(json.dumps(API_ERROR)) + stream.feed(json.dumps(REPLY)) + stream.finish()

    assert [s.error for s in steps if isinstance(s, ModelStep)] == [
        "API Error: Connection error.",
        None,
    ]
