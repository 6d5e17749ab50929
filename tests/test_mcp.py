"""The MCP server: JSON-RPC over stdio with the same stabilization as the developer's tools."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from semspec.agents.mcp_server import McpServer
from semspec.agents.mcp_tools import McpToolset
from semspec.agents.stabilization import Stabilizer
from semspec.agents.workspace import Workspace


def server_for(repo: Path, pack: Any = None) -> McpServer:
    return McpServer(McpToolset(Workspace(repo), Stabilizer(), "conn-1", pack))


def call(server: McpServer, name: str, **arguments: Any) -> dict[str, Any]:
    reply = server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    assert reply is not None
    result: dict[str, Any] = reply["result"]
    return result


def test_mcp_over_stdio_initializes_lists_tools_and_searches(git_repo: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "return a + b"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(git_repo), "mcp"],
        input=stdin + "not json\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]

    assert [r["id"] for r in replies] == [1, 2, 3, 4, None]
    assert replies[0]["result"]["serverInfo"]["name"] == "semspec"
    assert {t["name"] for t in replies[1]["result"]["tools"]} == {
        "search",
        "read",
        "meaning_pack",
        "evidence_fetch",
    }
    found = replies[2]["result"]["structuredContent"]
    assert [c["path"] for c in found["candidates"]] == ["calc.py"]
    assert replies[3]["error"]["code"] == -32601
    assert replies[4]["error"]["code"] == -32700


def test_mcp_read_is_gated_like_the_developers_read(git_repo: Path) -> None:
    server = server_for(git_repo)

    blocked = call(server, "read", path="calc.py")
    found = call(server, "search", query="def add")["structuredContent"]
    read = call(server, "read", candidate_id=found["candidates"][0]["candidate_id"])

    assert blocked["isError"] is True
    assert blocked["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert read["isError"] is False
    assert "return a + b" in read["structuredContent"]["content"]
    assert (
        read["structuredContent"]["meta"]["stabilization"]["metrics_snapshot"]["reads_count"] == 1
    )


def test_mcp_sessions_are_keyed_by_session_id_else_by_connection(git_repo: Path) -> None:
    server = server_for(git_repo)
    call(server, "search", query="def add", session_id="alpha")

    other = call(server, "read", path="calc.py", session_id="beta")
    connection = call(server, "read", path="calc.py")
    same = call(server, "read", path="calc.py", session_id="alpha")

    assert other["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert connection["structuredContent"]["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert same["structuredContent"]["error"]["code"] == "SEARCH_REF_REQUIRED"


def test_evidence_fetch_returns_exact_lines_and_detects_stale_pointers(git_repo: Path) -> None:
    server = server_for(git_repo)
    digest = hashlib.sha256((git_repo / "calc.py").read_bytes()).hexdigest()[:8]
    pointer = f"calc.py:2-2#{digest}"

    fresh = call(server, "evidence_fetch", pointers=[pointer, "nonsense"])["structuredContent"]
    (git_repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    stale = call(server, "evidence_fetch", pointers=[pointer])["structuredContent"]

    assert fresh["evidence"][0]["content"] == "     2|     return a + b"
    assert fresh["evidence"][1]["ok"] is False
    assert stale["evidence"][0]["stale"] is True


def test_evidence_fetch_cannot_leave_the_repository(git_repo: Path) -> None:
    result = call(server_for(git_repo), "evidence_fetch", pointers=["../x.py:1-2#abcdef12"])

    assert result["isError"] is True
    assert "outside the worktree" in result["structuredContent"]["error"]


def test_meaning_pack_uses_the_builder_and_explains_a_missing_index(git_repo: Path) -> None:
    seen: list[list[str]] = []

    def builder(paths: Any) -> str:
        seen.append(list(paths))
        return "MP1 files=1 claims=1 evidenced=1"

    packed = call(server_for(git_repo, builder), "meaning_pack", paths=["./calc.py"])
    missing = call(server_for(git_repo), "meaning_pack", paths=["calc.py"])

    assert packed["structuredContent"]["pack"].startswith("MP1")
    assert seen == [["calc.py"]]
    assert "semspec index" in missing["structuredContent"]["error"]
