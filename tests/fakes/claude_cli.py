"""A stand-in for Claude Code in print mode (``claude -p --output-format stream-json``).

It reads the prompt on stdin and works as the real CLI does: ask the model (an OpenAI-compatible
server, ``--base-url``; in tests the fake server), run each ``Bash`` command the model asks for
in the current folder for real, send the output back, and repeat until the model answers in
text. Everything it does is printed as Claude Code's stream: an ``assistant`` line per model
reply (its ``tool_use`` blocks and usage), a ``user`` line with the ``tool_result`` blocks
(``is_error`` when the command exited non-zero), and a closing ``result`` line with the model's
last text. Only the standard library: it runs under whatever environment the agent gets.

Run: ``python claude_cli.py --base-url URL [--model NAME] -p --output-format stream-json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

MAX_TURNS = 60
BASH = {
    "type": "function",
    "function": {
        "name": "Bash",
        "description": "Run a shell command in the working folder.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
SYSTEM = "You are the developer agent, played by a fake Claude Code."


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def ask(base_url: str, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = json.dumps({"model": model, "messages": messages, "tools": [BASH]}).encode()
    request = urllib.request.Request(
        f"{base_url}/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def bash(command: str) -> tuple[str, bool]:
    """Run ``command`` with this interpreter's folder first on PATH; (output, failed)."""
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["/bin/sh", "-c", command], capture_output=True, text=True, env=env, timeout=120
    )
    return done.stdout + done.stderr, done.returncode != 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="fake-model")
    options, _ = parser.parse_known_args()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": sys.stdin.read()},
    ]
    emit({"type": "system", "subtype": "init", "model": options.model})
    for turn in range(MAX_TURNS):
        reply = ask(options.base_url, options.model, messages)
        message = reply["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        usage = reply.get("usage") or {}
        blocks: list[dict[str, Any]] = []
        if message.get("content"):
            blocks.append({"type": "text", "text": message["content"]})
        for call in calls:
            arguments = json.loads(call["function"]["arguments"])
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": "Bash", "input": arguments}
            )
        emit(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{turn}",
                    "model": options.model,
                    "content": blocks,
                    "usage": {
                        "input_tokens": usage.get("prompt_tokens", 0),
                        "output_tokens": usage.get("completion_tokens", 0),
                    },
                },
            }
        )
        messages.append(message)
        if not calls:
            emit({"type": "result", "subtype": "success", "result": message.get("content") or ""})
            return 0
        results = []
        for call in calls:
            output, failed = bash(json.loads(call["function"]["arguments"])["command"])
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call["id"],
                    "content": output,
                    "is_error": failed,
                }
            )
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        emit({"type": "user", "message": {"role": "user", "content": results}})
    emit({"type": "result", "subtype": "error_max_turns", "is_error": True, "result": ""})
    return 1


if __name__ == "__main__":
    sys.exit(main())
