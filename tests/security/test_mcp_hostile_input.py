"""``semspec mcp`` under hostile input: it answers every call and serves nothing it must not.

An MCP client is an outside agent: it may send any path or argument, and the repository it
reads may hold what agent-written code left there (FIFOs, links out, a 3 GiB sparse file) next
to ``.semspec/run`` (the database, gate logs, other tasks' worktrees). The server is driven as a
client drives it: ``semspec mcp`` in a subprocess, spoken to by the official SDK's stdio client.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from semspec.agents.mcp_server import build_server
from semspec.agents.mcp_tools import McpToolset
from semspec.agents.stabilization import Stabilizer
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.workspace import Workspace
from tests.support.hostile_tree import (
    LONG_NAME,
    SECRET,
    SLOW_QUERY,
    SLOW_TEXT,
    SPARSE_BYTES,
    VALUES,
    hostile_repo,
    snapshot,
)

T = TypeVar("T")
TOOLS = ["search", "read", "meaning_pack", "evidence_fetch", "deploy"]
ARGUMENT_NAMES = [
    "query",
    "path",
    "regex",
    "candidate_id",
    "bundle_id",
    "start_line",
    "end_line",
    "paths",
    "pointers",
    "session_id",
]


def _sendable(call: tuple[str, dict[str, Any]]) -> bool:
    """Whether the SDK client can put ``call`` on the wire (it cannot encode a lone surrogate,
    which the tool tests send instead)."""
    try:
        json.dumps(call, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


CALLS = st.tuples(
    st.sampled_from(TOOLS),
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES), VALUES, max_size=4),
).filter(_sendable)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One planted repository for every test here (``semspec mcp`` only reads)."""
    yield hostile_repo(tmp_path_factory.mktemp("mcp-hostile"))


def _server(repo: Path) -> StdioServerParameters:
    # The gate off: every read reaches the file, none stops at "search first".
    args = ["-m", "semspec", "--repo", str(repo), "mcp", "--gate", "off"]
    return StdioServerParameters(command=sys.executable, args=args)


def _in_own_loop(main: Callable[[], Awaitable[T]]) -> T:
    """``main()`` run to its end on an event loop of its own thread (a sync hypothesis test)."""
    out: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(anyio.run(main))
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return out[0]


async def _over_stdio(repo: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's result (or the JSON-RPC error) from one ``semspec mcp``, then a ping."""
    answers: list[Any] = []
    async with stdio_client(_server(repo)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, arguments in calls:
            try:
                answers.append(await session.call_tool(name, arguments))
            except MCPError as exc:  # refused by the protocol layer: an answer all the same
                answers.append(exc.error)
        answers.append(await session.send_ping())
    return answers


def _text(answer: Any) -> str:
    return json.dumps(answer.model_dump(mode="json"), ensure_ascii=False)


def _call_error(answer: Any) -> str:
    assert answer.is_error is True, answer
    return str(answer.structured_content["error"])


def test_mcp_refuses_the_run_folder_git_and_special_files_over_stdio(repo: Path) -> None:
    pointer = f".semspec/run/temporal.db:1-1#{'0' * 8}"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read", {"path": ".semspec/run/temporal.db", "start_line": 1, "end_line": 2}),
        ("read", {"path": ".git/config", "start_line": 1, "end_line": 20}),
        ("read", {"path": "passwd.py", "start_line": 1, "end_line": 2}),
        ("read", {"path": "pipe.py", "start_line": 1, "end_line": 2}),
        ("read", {"path": "sparse.py", "start_line": 1, "end_line": 2}),
        ("read", {"path": LONG_NAME, "start_line": 1, "end_line": 2}),
        ("evidence_fetch", {"pointers": [pointer]}),
        ("meaning_pack", {"paths": [".semspec/run/temporal.db"]}),
        ("search", {"query": SECRET.split("-")[-1]}),
        ("search", {"query": "token", "path": ".git"}),
    ]

    *answers, pong = _in_own_loop(lambda: _over_stdio(repo, calls))
    run_db, git_config, link_out, fifo, sparse, too_long, evidence, pack, found, in_git = answers

    assert "inside .semspec/" in _call_error(run_db)
    assert "inside .git/" in _call_error(git_config)
    assert "outside the worktree" in _call_error(link_out)
    assert "'pipe.py' is a FIFO" in _call_error(fifo)
    assert f"is {SPARSE_BYTES} bytes, larger than" in _call_error(sparse)
    assert "File name too long (ENAMETOOLONG)" in _call_error(too_long)
    assert "inside .semspec/" in _call_error(evidence)
    assert "inside .semspec/" in _call_error(pack)
    assert found.is_error is False and found.structured_content["candidates"] == []
    assert "inside .git/" in _call_error(in_git)
    assert all(SECRET not in _text(answer) for answer in answers)
    assert pong is not None


@pytest.mark.slow  # waits out a call's deadline
async def test_a_call_past_its_deadline_is_an_error_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
    repo = hostile_repo(tmp_path)
    (repo / "words.txt").write_text(SLOW_TEXT)
    toolset = McpToolset(Workspace(repo), Stabilizer(StabilizationPolicy()), "conn-1")

    async with Client(build_server(toolset, timeout_s=1.0)) as client:
        with anyio.fail_after(30):
            slow = await client.call_tool("search", {"query": SLOW_QUERY, "regex": True})
        after = await client.call_tool("search", {"query": "def add"})

    assert slow.is_error is True
    assert "stopped after 1 s" in slow.structured_content["error"]
    assert after.is_error is False
    assert [c["path"] for c in after.structured_content["candidates"]] == ["calc.py"]


@pytest.mark.slow  # hypothesis drives the MCP server
@settings(deadline=None, max_examples=4)
@given(st.lists(CALLS, min_size=15, max_size=30))
def test_semspec_mcp_answers_every_random_call_and_survives(
    repo: Path, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    guarded = (repo / ".semspec", repo / ".git", repo.parent / "outside")
    before = snapshot(*guarded)

    *answers, pong = _in_own_loop(lambda: _over_stdio(repo, calls))

    assert len(answers) == len(calls)
    assert pong is not None  # still serving after all of them
    for (_, arguments), answer in zip(calls, answers, strict=True):
        echoed = SECRET in json.dumps(arguments)
        assert echoed or SECRET not in _text(answer)
    assert snapshot(*guarded) == before
