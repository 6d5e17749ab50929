"""The MCP server: the official SDK on stdio, with the same stabilization as the developer's tools.

Two oracles speak to ``semspec mcp`` as a subprocess: raw JSON-RPC lines (the wire format any
client sends) and the SDK's own stdio client. The other tests use the SDK's in-process client.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from semspec.agents.mcp_server import build_server
from semspec.agents.mcp_tools import McpToolset
from semspec.agents.stabilization import Stabilizer
from semspec.agents.workspace import Workspace

TOOLS = {"search", "read", "meaning_pack", "evidence_fetch"}
LONG_PATH = "a" * 300  # longer than a file name may be: the file system refuses it


def semspec_mcp(repo: Path) -> list[str]:
    return [sys.executable, "-m", "semspec", "--repo", str(repo), "mcp"]


class Tools:
    """An in-process SDK client of one server; ``call`` returns the result as the wire has it."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)


@asynccontextmanager
async def connected(
    repo: Path, pack: Callable[[Sequence[str]], str] | None = None
) -> AsyncIterator[Tools]:
    server = build_server(McpToolset(Workspace(repo), Stabilizer(), "conn-1", pack))
    async with Client(server) as client:
        yield Tools(client)


def test_raw_json_rpc_over_stdio_answers_each_request_and_survives_bad_ones(
    git_repo: Path,
) -> None:
    process = subprocess.Popen(
        semspec_mcp(git_repo), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )

    def send(message: dict[str, Any] | str) -> dict[str, Any] | None:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        process.stdin.flush()
        if isinstance(message, str) or "id" not in message:
            return None
        reply: dict[str, Any] = json.loads(process.stdout.readline())
        assert reply["id"] == message["id"]
        return reply

    def call(ident: int, name: str, arguments: Any) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        reply = send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})
        assert reply is not None
        return reply

    with process:
        hello = send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        found = call(3, "search", {"query": "return a + b"})
        unsupported = send({"jsonrpc": "2.0", "id": 4, "method": "resources/list"})
        unknown = call(5, "deploy", {})
        not_an_object = call(6, "search", "return a + b")
        too_long = call(7, "read", {"path": LONG_PATH, "start_line": 1, "end_line": 2})
        send("not json")
        pong = send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert process.stdin is not None
        process.stdin.close()  # end of input: the server stops by itself
        assert process.wait(timeout=30) == 0

    assert hello is not None and hello["result"]["serverInfo"]["name"] == "semspec"
    assert listed is not None and {t["name"] for t in listed["result"]["tools"]} == TOOLS
    assert [c["path"] for c in found["result"]["structuredContent"]["candidates"]] == ["calc.py"]
    assert unsupported is not None and unsupported["error"]["code"] == -32601
    assert unknown["result"]["isError"] is True
    assert "unknown tool 'deploy'" in unknown["result"]["structuredContent"]["error"]
    assert not_an_object["error"]["code"] == -32602
    assert too_long["result"]["isError"] is True
    assert "cannot be read" in too_long["result"]["structuredContent"]["error"]
    assert pong == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_the_sdks_stdio_client_lists_the_tools_and_searches(git_repo: Path) -> None:
    command, *args = semspec_mcp(git_repo)
    server = StdioServerParameters(command=command, args=args)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        found = await session.call_tool("search", {"query": "return a + b"})

    assert {tool.name for tool in listed.tools} == TOOLS
    assert found.is_error is False
    assert [c["path"] for c in found.structured_content["candidates"]] == ["calc.py"]


async def test_mcp_read_is_gated_like_the_developers_read(git_repo: Path) -> None:
    async with connected(git_repo) as tools:
        blocked = await tools.call("read", path="calc.py")
        found = (await tools.call("search", query="def add"))["structuredContent"]
        read = await tools.call("read", candidate_id=found["candidates"][0]["candidate_id"])

    assert blocked["isError"] is True
    assert blocked["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert read["isError"] is False
    assert "return a + b" in read["structuredContent"]["content"]
    assert (
        read["structuredContent"]["meta"]["stabilization"]["metrics_snapshot"]["reads_count"] == 1
    )


async def test_mcp_sessions_are_keyed_by_session_id_else_by_connection(git_repo: Path) -> None:
    async with connected(git_repo) as tools:
        await tools.call("search", query="def add", session_id="alpha")
        other = await tools.call("read", path="calc.py", session_id="beta")
        connection = await tools.call("read", path="calc.py")
        same = await tools.call("read", path="calc.py", session_id="alpha")

    assert other["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert connection["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert same["structuredContent"]["error"]["code"] == "SEARCH_REF_REQUIRED"


async def test_evidence_fetch_returns_exact_lines_and_detects_stale_pointers(
    git_repo: Path,
) -> None:
    digest = hashlib.sha256((git_repo / "calc.py").read_bytes()).hexdigest()[:8]
    pointer = f"calc.py:2-2#{digest}"
    async with connected(git_repo) as tools:
        fresh = await tools.call("evidence_fetch", pointers=[pointer, "nonsense"])
        (git_repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        stale = await tools.call("evidence_fetch", pointers=[pointer])

    assert fresh["structuredContent"]["evidence"][0]["content"] == "     2|     return a + b"
    assert fresh["structuredContent"]["evidence"][1]["ok"] is False
    assert stale["structuredContent"]["evidence"][0]["stale"] is True


async def test_evidence_fetch_cannot_leave_the_repository(git_repo: Path) -> None:
    async with connected(git_repo) as tools:
        result = await tools.call("evidence_fetch", pointers=["../x.py:1-2#abcdef12"])

    assert result["isError"] is True
    assert "outside the worktree" in result["structuredContent"]["error"]


async def test_a_path_the_file_system_refuses_is_a_tool_error_not_a_crash(git_repo: Path) -> None:
    async with connected(git_repo) as tools:
        read = await tools.call("read", path=LONG_PATH, start_line=1, end_line=2)
        evidence = await tools.call("evidence_fetch", pointers=[f"{LONG_PATH}:1-2#abcdef12"])
        still_serving = await tools.call("search", query="def add")

    assert read["isError"] is True
    assert "File name too long" in read["structuredContent"]["error"]
    assert evidence["structuredContent"]["evidence"][0]["ok"] is False
    assert "cannot be read" in evidence["structuredContent"]["evidence"][0]["error"]
    assert still_serving["isError"] is False


async def test_meaning_pack_uses_the_builder_and_explains_a_missing_index(git_repo: Path) -> None:
    seen: list[list[str]] = []

    def builder(paths: Sequence[str]) -> str:
        seen.append(list(paths))
        return "MP1 files=1 claims=1 evidenced=1"

    async with connected(git_repo, builder) as tools:
        packed = await tools.call("meaning_pack", paths=["./calc.py"])
    async with connected(git_repo) as tools:
        missing = await tools.call("meaning_pack", paths=["calc.py"])

    assert packed["structuredContent"]["pack"].startswith("MP1")
    assert seen == [["calc.py"]]
    assert "semspec index" in missing["structuredContent"]["error"]
