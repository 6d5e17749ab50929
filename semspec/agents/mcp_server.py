"""semspec's MCP server: the official SDK's low-level server with the four tools of ``mcp_tools``.

The SDK owns the protocol (handshake, ``ping``, JSON-RPC errors, the stdio transport); this
module only answers ``tools/list`` with ``TOOL_SCHEMAS`` and ``tools/call`` with the toolset. A
tool's refusal (bad arguments, the read gate, the budget) is a result with ``isError`` whose
JSON text and ``structuredContent`` the model can read; a malformed request is a JSON-RPC error
from the SDK. Neither ends the server.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from semspec.agents.mcp_tools import TOOL_SCHEMAS, McpToolset
from semspec.agents.workspace import ToolError

SERVER_NAME = "semspec"


def build_server(toolset: McpToolset, version: str = "0") -> Server[Any]:
    """An MCP server whose tools are ``toolset``'s, announced as ``semspec`` ``version``."""
    tools = [types.Tool.model_validate(schema) for schema in TOOL_SCHEMAS]
    # Tools read files and walk the repository: they run on a worker thread so the event loop
    # keeps answering pings and cancellations. One at a time, in arrival order, because the
    # sessions' budgets are plain state that pipelined calls must see applied in turn.
    one_at_a_time = anyio.CapacityLimiter(1)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        payload = await anyio.to_thread.run_sync(
            _call, toolset, params.name, params.arguments or {}, limiter=one_at_a_time
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
            structured_content=payload,
            is_error=not payload.get("ok", False),
        )

    return Server(SERVER_NAME, version=version, on_list_tools=list_tools, on_call_tool=call_tool)


def _call(toolset: McpToolset, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        return toolset.call(name, arguments)
    except ToolError as exc:
        return {"ok": False, "error": str(exc)}


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until it closes stdin."""

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
