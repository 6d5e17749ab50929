"""The LLM developer agent against the fake OpenAI-compatible server, in real git repositories."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from semspec.agents.compaction.policy import ContextBudgetPolicy
from semspec.agents.llm_developer import DeveloperSettings, LLMDeveloper
from semspec.agents.protocol import DeveloperRequest
from semspec.agents.stabilization.layer import candidate_id
from semspec.core.errors import ProviderError
from semspec.core.reasons import FallbackReason
from semspec.model.providers.openai_chat import OpenAIChatProvider
from tests.fakes.llm_server import (
    FakeLLMServer,
    FakeReply,
    RecordedRequest,
    Responder,
    call,
    http_error,
    text,
)

NEW_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def request_for(repo: Path, **overrides: Any) -> DeveloperRequest:
    fields: dict[str, Any] = {
        "task_id": "t1",
        "title": "Add sub",
        "description": "Add a sub(a, b) function next to add.",
        "criteria": ["sub(3, 1) == 2"],
        "task_files": ["calc.py"],
        "worktree": str(repo),
        "iteration": 1,
    }
    fields.update(overrides)
    return DeveloperRequest(**fields)


def developer(server: FakeLLMServer, **settings: Any) -> LLMDeveloper:
    provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
    return LLMDeveloper(provider, ContextBudgetPolicy(32_000), DeveloperSettings(**settings))


def tool_outputs(server: FakeLLMServer) -> list[dict[str, Any]]:
    """JSON outputs of every tool call, as the model saw them in the last request."""
    return [json.loads(m["content"]) for m in server.last_messages() if m["role"] == "tool"]


async def test_developer_searches_reads_edits_and_submits(git_repo: Path) -> None:
    hit = candidate_id("def add", "calc.py", 1)
    script = [
        call("search", {"query": "def add"}),
        call("read", {"candidate_id": hit}),
        call("write_file", {"path": "calc.py", "content": NEW_CALC}),
        call("submit", {"summary": "added sub"}),
    ]
    with FakeLLMServer(script) as server:
        result = await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)
        first_request = server.requests[0].body

    assert result.outcome == "submitted"
    assert result.summary == "added sub"
    assert result.tokens_used == 4 * 15
    assert (git_repo / "calc.py").read_text() == NEW_CALC
    search, read, write = outputs[:3]
    assert [c["candidate_id"] for c in search["candidates"]] == [hit]
    assert "return a + b" in read["content"]
    assert read["meta"]["stabilization"]["budget_state"] == "ok"
    assert write == {"ok": True, "path": "calc.py", "lines": 7}
    assert "Add a sub(a, b) function" in first_request["messages"][1]["content"]
    assert {t["function"]["name"] for t in first_request["tools"]} >= {
        "search",
        "read",
        "write_file",
        "apply_patch",
        "list_dir",
        "submit",
    }


async def test_developer_applies_a_bare_unified_diff(git_repo: Path) -> None:
    patch = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
        " def add(a, b):\n-    return a + b\n+    return b + a\n"
    )
    with FakeLLMServer(
        [call("apply_patch", {"patch": patch}), call("submit", {"summary": "s"})]
    ) as server:
        result = await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)

    assert result.outcome == "submitted"
    assert outputs[0] == {"ok": True, "files": ["calc.py"]}
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return b + a\n"


async def test_developer_creates_a_file_with_a_bare_new_file_diff(git_repo: Path) -> None:
    patch = "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    script = [call("apply_patch", {"patch": patch}), call("submit", {"summary": "s"})]
    with FakeLLMServer(script) as server:
        await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)

    assert outputs[0] == {"ok": True, "files": ["pkg/new.py"]}
    assert (git_repo / "pkg" / "new.py").read_text() == "x = 1\ny = 2\n"


async def test_patch_with_wrong_context_is_refused_with_advice(git_repo: Path) -> None:
    patch = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def mul(a, b):\n-    x\n+    y\n"
    script = [call("apply_patch", {"patch": patch}), call("submit", {"summary": "s"})]
    with FakeLLMServer(script) as server:
        await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)

    assert outputs[0]["ok"] is False
    assert "does not apply" in outputs[0]["error"]
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_paths_that_leave_the_worktree_are_refused(git_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(outside, git_repo / "link")
    script = [
        call("write_file", {"path": "link/evil.py", "content": "x"}),
        call("read", {"path": "link/secret.txt", "start_line": 1, "end_line": 1}),
        call("write_file", {"path": "../escape.py", "content": "x"}),
        call("read", {"path": ".git/config", "start_line": 1, "end_line": 5}),
        call("apply_patch", {"patch": "--- /dev/null\n+++ b/../evil.py\n@@ -0,0 +1 @@\n+x\n"}),
        call("submit", {"summary": "tried"}),
    ]
    with FakeLLMServer(script) as server:
        await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)

    assert not (outside / "evil.py").exists()
    assert not (tmp_path / "escape.py").exists()
    assert not (git_repo.parent / "evil.py").exists()
    assert [o["ok"] for o in outputs[:5]] == [False] * 5
    assert "outside the worktree" in outputs[0]["error"]
    assert "outside the worktree" in outputs[1]["error"]
    assert "outside the worktree" in outputs[2]["error"]
    assert ".git/" in outputs[3]["error"]
    assert "outside the worktree" in outputs[4]["error"]


async def test_bad_tool_arguments_go_back_to_the_model_as_errors(git_repo: Path) -> None:
    script = [call("read", "{not json"), call("frobnicate", {}), call("submit", {"summary": "s"})]
    with FakeLLMServer(script) as server:
        result = await developer(server).develop(request_for(git_repo))
        outputs = tool_outputs(server)

    assert result.outcome == "submitted"
    assert "not valid JSON" in outputs[0]["error"]
    assert "unknown tool 'frobnicate'" in outputs[1]["error"]


async def test_developer_stops_at_its_step_limit(git_repo: Path) -> None:
    with FakeLLMServer([text("thinking"), text("still thinking")]) as server:
        result = await developer(server, max_steps=2).develop(request_for(git_repo))
        nudged = server.last_messages()[-1]

    assert result.outcome == "step_limit"
    assert "submit" in nudged["content"]


async def test_developer_stops_when_its_token_budget_is_spent(git_repo: Path) -> None:
    expensive = FakeReply(tool_calls=(("list_dir", {}),), usage=(900, 200))
    with FakeLLMServer([expensive, expensive]) as server:
        result = await developer(server, token_budget=1_000).develop(request_for(git_repo))

    assert result.outcome == "budget_exhausted"
    assert result.reason == FallbackReason.BUDGET_EXHAUSTED.value
    assert result.tokens_used == 1_100
    assert len(server.requests) == 1


async def test_developer_gives_up_on_a_window_its_prompt_cannot_fit(git_repo: Path) -> None:
    provider = OpenAIChatProvider(model="fake-model", base_url="http://127.0.0.1:9", timeout_s=1)
    agent = LLMDeveloper(provider, ContextBudgetPolicy(window_tokens=300, response_reserve=100))

    result = await agent.develop(request_for(git_repo))

    assert result.outcome == "budget_exhausted"
    assert "context window" in result.summary


async def test_rate_limit_from_the_server_propagates_as_a_retryable_provider_error(
    git_repo: Path,
) -> None:
    with (
        FakeLLMServer([http_error(429, "slow down", retry_after=7)]) as server,
        pytest.raises(ProviderError) as caught,
    ):
        await developer(server).develop(request_for(git_repo))

    assert caught.value.reason is FallbackReason.RATE_LIMITED
    assert caught.value.retryable
    assert caught.value.retry_after == 7


def _rehydrate_shown_pointer(request: RecordedRequest) -> FakeReply:
    """Reply like a model that follows the pointer summary's instructions."""
    summary = request.body["messages"][-1]["content"]
    pointer_id = summary.split('rehydrate(pointer_id="', 1)[1].split('"', 1)[0]
    return call("rehydrate", {"pointer_id": pointer_id, "start_line": 1, "end_line": 200})


async def test_large_tool_output_becomes_a_pointer_the_agent_rehydrates_in_one_call(
    git_repo: Path,
) -> None:
    lines = [f"ROW {i:04d} " + "x" * 40 for i in range(1, 121)]
    (git_repo / "big.txt").write_text("\n".join(lines) + "\n")
    script: list[FakeReply | Responder] = [
        call("read", {"path": "big.txt", "start_line": 1, "end_line": 120}),
        _rehydrate_shown_pointer,
        call("submit", {"summary": "s"}),
    ]
    policy = ContextBudgetPolicy(32_000, max_tool_output_tokens=500)
    with FakeLLMServer(script) as server:
        provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
        agent = LLMDeveloper(provider, policy)
        result = await agent.develop(request_for(git_repo))
        messages = server.last_messages()

    tool_messages = [m["content"] for m in messages if m["role"] == "tool"]
    assert result.outcome == "submitted"
    assert tool_messages[0].startswith("[pointer ptr-")
    assert "ROW 0120" not in tool_messages[0]
    rehydrated = json.loads(json.loads(tool_messages[1])["content"])
    assert rehydrated["content"].splitlines()[119] == f"   120| {lines[119]}"
    assert agent.last_run is not None
    assert agent.last_run.compactor.tokens_saved > 0
