"""A minimal MCP server over stdio: newline-delimited JSON-RPC 2.0 with the tools capability.

Only what tool-using clients need: ``initialize``, ``ping``, ``tools/list`` and ``tools/call``.
Tool results are JSON text (and ``structuredContent``); bad arguments come back as tool errors
(``isError``) the model can read, protocol mistakes as JSON-RPC errors.
"""

from __future__ import annotations

import json
from typing import IO, Any

from semspec.agents.mcp_tools import TOOL_SCHEMAS, McpToolset
from semspec.agents.workspace import ToolError

PROTOCOL_VERSION = "2025-06-18"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _result(ident: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


class McpServer:
    """Dispatches JSON-RPC messages to the toolset."""

    def __init__(self, toolset: McpToolset, version: str = "0") -> None:
        self.toolset = toolset
        self.version = version

    def handle(self, message: Any) -> dict[str, Any] | None:
        """The reply to one message, or None for notifications."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "expected a JSON-RPC 2.0 object")
        ident = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        if ident is None:
            return None  # notifications (e.g. notifications/initialized) need no answer
        if not isinstance(params, dict):
            return _error(ident, INVALID_PARAMS, "params must be an object")
        if method == "initialize":
            requested = params.get("protocolVersion")
            return _result(
                ident,
                {
                    "protocolVersion": requested
                    if isinstance(requested, str)
                    else PROTOCOL_VERSION,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "semspec", "version": self.version},
                },
            )
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": TOOL_SCHEMAS})
        if method == "tools/call":
            return self._call(ident, params)
        return _error(ident, METHOD_NOT_FOUND, f"method {method!r} not supported")

    def _call(self, ident: Any, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _error(ident, INVALID_PARAMS, "tools/call needs a name and an arguments object")
        try:
            payload = self.toolset.call(name, arguments)
        except ToolError as exc:
            payload = {"ok": False, "error": str(exc)}
        return _result(
            ident,
            {
                "content": [{"type": "text", "text": json.dumps(payload, ensure_ascii=False)}],
                "structuredContent": payload,
                "isError": not payload.get("ok", False),
            },
        )

    def serve(self, reader: IO[str], writer: IO[str]) -> None:
        """Answer messages from ``reader`` on ``writer`` until end of input."""
        for line in reader:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError as exc:
                reply: dict[str, Any] | None = _error(None, PARSE_ERROR, f"not JSON: {exc.msg}")
            else:
                reply = self.handle(message)
            if reply is not None:
                writer.write(json.dumps(reply, ensure_ascii=False) + "\n")
                writer.flush()
