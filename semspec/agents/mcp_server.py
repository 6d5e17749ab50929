"""semspec's MCP server: the official SDK's low-level server with the four tools of ``mcp_tools``.

The SDK owns the protocol (handshake, ``ping``, JSON-RPC errors, the stdio transport); this
module only answers ``tools/list`` with ``TOOL_SCHEMAS`` and ``tools/call`` with the toolset. A
tool's refusal (bad arguments, the read gate, the budget) is a result with ``isError`` whose
JSON text and ``structuredContent`` the model can read; a malformed request is a JSON-RPC error
from the SDK. Neither ends the server. A call that runs past ``timeout_s`` (a costly search) is
such a refusal too, and the server goes on to the next request.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from semspec.agents.mcp_tools import TOOL_SCHEMAS, McpToolset
from semspec.agents.tools.deadline import in_thread
from semspec.agents.workspace import ToolError, os_error

SERVER_NAME = "semspec"
TOOL_TIMEOUT_S = 60.0
"""How long one tool call may take before the client gets a timeout error instead."""


def build_server(
    toolset: McpToolset, version: str = "0", timeout_s: float = TOOL_TIMEOUT_S
) -> Server[Any]:
    """An MCP server whose tools are ``toolset``'s, announced as ``semspec`` ``version``."""
    tools = [types.Tool.model_validate(schema) for schema in TOOL_SCHEMAS]
    # Tools read files and walk the repository: they run on a thread of their own so the event
    # loop keeps answering pings and cancellations. One at a time, in arrival order, because the
    # sessions' budgets are plain state that pipelined calls must see applied in turn.
    one_at_a_time = anyio.Lock()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        stop = threading.Event()
        arguments = params.arguments or {}
        async with one_at_a_time:
            try:
                payload = await in_thread(
                    lambda: _call(toolset, params.name, arguments, stop), timeout_s
                )
            except TimeoutError:
                stop.set()
                payload = {
                    "ok": False,
                    "error": f"{params.name}: stopped after {timeout_s:g} s; narrow it "
                    "(a path to search under, a simpler pattern)",
                }
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
            structured_content=payload,
            is_error=not payload.get("ok", False),
        )

    return Server(SERVER_NAME, version=version, on_list_tools=list_tools, on_call_tool=call_tool)


def _call(
    toolset: McpToolset, name: str, arguments: dict[str, Any], stop: threading.Event
) -> dict[str, Any]:
    try:
        return toolset.call(name, arguments, stop.is_set)
    except ToolError as exc:
        return {"ok": False, "error": str(exc)}
    except OSError as exc:  # a refusal no tool foresaw: still the client's to read
        return {"ok": False, "error": str(os_error(exc, str(exc.filename or name), "used"))}


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until it closes stdin."""

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
