"""The agents report each model call and tool call as a step, and stop before the next one when
their observer or their dollar budget says so (fake LLM server, real git repositories)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from semspec.agents.command_developer import CommandDeveloper, CommandFencing
from semspec.agents.compaction.policy import ContextBudgetPolicy
from semspec.agents.llm_developer import LLMDeveloper
from semspec.agents.llm_reviewer import LLMReviewer
from semspec.agents.protocol import ReviewRequest
from semspec.agents.scripted import Script, ScriptedDeveloper
from semspec.agents.steps import StepRecord, StopReason, action_hash, observation_hash
from semspec.core.errors import ProviderError
from semspec.model.pricing import Price
from semspec.model.providers.openai_chat import OpenAIChatProvider
from tests.agents.test_developer_agent import request_for
from tests.fakes.llm_server import FakeLLMServer, cached, call, http_error, text

PRICE = Price(input_per_1m=500.0, output_per_1m=1_000.0, cached_input_per_1m=50.0)
"""A call of 10 input and 5 output tokens costs $0.01 (none cached)."""
NEW_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
APPROVE = json.dumps({"verdict": "approve", "summary": "fine"})


class Recorder:
    """A ``StepObserver`` that keeps every step and stops when told (``stop_at`` steps)."""

    def __init__(self, stop: StopReason | None = None, stop_at: int = 0) -> None:
        self.steps: list[StepRecord] = []
        self.stop = stop
        self.stop_at = stop_at

    def step(self, record: StepRecord) -> None:
        self.steps.append(record)

    def stop_requested(self) -> StopReason | None:
        return self.stop if len(self.steps) >= self.stop_at else None


def review_request(**overrides: Any) -> ReviewRequest:
    fields: dict[str, Any] = {
        "task_id": "t1",
        "title": "Add sub",
        "description": "Add sub.",
        "criteria": ["sub(3, 1) == 2"],
        "task_files": ["calc.py"],
        "diff": "+def sub(a, b): return a - b",
        "iteration": 1,
    }
    return ReviewRequest(**{**fields, **overrides})


def developer(server: FakeLLMServer, price: Price | None = PRICE) -> LLMDeveloper:
    provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
    return LLMDeveloper(provider, ContextBudgetPolicy(32_000), model="fake-model", price=price)


def reviewer(server: FakeLLMServer, price: Price | None = PRICE) -> LLMReviewer:
    provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
    return LLMReviewer(provider, model="fake-model", price=price)


async def test_each_model_call_and_tool_call_is_one_step_with_tokens_cost_and_hashes(
    git_repo: Path,
) -> None:
    script = [
        cached(call("list_dir", {"path": "."}), 4),
        text("let me think"),
        call("write_file", {"path": "calc.py", "content": NEW_CALC}),
        call("submit", {"summary": "added sub"}),
    ]
    observer = Recorder()
    with FakeLLMServer(script) as server:
        result = await developer(server).develop(request_for(git_repo), observer)

    steps = observer.steps
    assert [(s.step, s.kind, s.tool) for s in steps] == [
        (1, "model", None),
        (2, "tool", "list_dir"),
        (3, "model", None),
        (4, "model", None),
        (5, "tool", "write_file"),
        (6, "model", None),
        (7, "tool", "submit"),
    ]
    first, listing = steps[0], steps[1]
    assert (first.input_tokens, first.output_tokens, first.cached_tokens) == (10, 5, 4)
    # 6 plain input tokens at $500/M, 4 cached at $50/M, 5 output at $1000/M.
    assert first.cost_usd == pytest.approx((6 * 500 + 4 * 50 + 5 * 1000) / 1e6)
    assert first.action_hash == action_hash("tool_calls", [["list_dir", {"path": "."}]])
    assert first.model == "fake-model" and first.role == "developer"
    assert listing.action_hash == action_hash("list_dir", {"path": "."})
    assert not listing.error and listing.model is None and listing.duration_ms >= 0
    assert steps[2].action_hash == ""  # a model turn without a tool call
    assert steps[2].observation_hash == observation_hash("let me think")
    usage = result.usage
    assert (usage.steps, usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (
        7,
        40,
        20,
        4,
    )
    assert usage.cost_usd == pytest.approx(sum(s.cost_usd or 0 for s in steps))
    assert usage.model == "fake-model" and not usage.unpriced and result.stopped is None


async def test_the_same_call_spelled_twice_has_one_action_hash(git_repo: Path) -> None:
    script = [
        call("list_dir", {"path": ".", "depth": 1}),
        call("list_dir", '{"depth": 1,  "path": "."}'),
        call("submit", {"summary": "s"}),
    ]
    observer = Recorder()
    with FakeLLMServer(script) as server:
        await developer(server).develop(request_for(git_repo), observer)

    model_1, list_1, model_2, list_2 = observer.steps[:4]
    assert model_1.action_hash == model_2.action_hash != ""
    assert list_1.action_hash == list_2.action_hash
    assert list_1.observation_hash == list_2.observation_hash


async def test_a_refused_tool_call_is_an_error_step(git_repo: Path) -> None:
    script = [call("read", {"path": "missing.py"}), call("submit", {"summary": "s"})]
    observer = Recorder()
    with FakeLLMServer(script) as server:
        await developer(server).develop(request_for(git_repo), observer)

    assert [s.error for s in observer.steps] == [False, True, False, False]


async def test_a_prompt_over_the_window_is_a_context_window_error_step_that_ends_the_turn(
    git_repo: Path,
) -> None:
    too_long = "This model's maximum context length is 32768 tokens. Please reduce the length."
    observer = Recorder()
    with FakeLLMServer([http_error(400, too_long)]) as server:
        result = await developer(server).develop(request_for(git_repo), observer)

    (step,) = observer.steps
    assert (step.kind, step.error, step.error_kind) == ("model", True, "context_window")
    # Said as what it is (the loop asks a human with it), not as a transport failure to retry.
    assert (result.outcome, result.reason) == ("budget_exhausted", "budget_exhausted")
    assert "context window: the provider refused the prompt" in result.summary


async def test_a_rate_limit_is_an_error_step_of_its_own_kind(git_repo: Path) -> None:
    observer = Recorder()
    with FakeLLMServer([http_error(429, "slow down")]) as server, pytest.raises(ProviderError):
        await developer(server).develop(request_for(git_repo), observer)

    assert [(s.error, s.error_kind) for s in observer.steps] == [(True, "rate_limited")]


async def test_a_halt_from_the_observer_stops_the_developer_before_its_next_step(
    git_repo: Path,
) -> None:
    script = [call("list_dir", {"path": "."}), call("list_dir", {"path": "."}), text("more")]
    observer = Recorder(stop="halt", stop_at=2)
    with FakeLLMServer(script) as server:
        result = await developer(server).develop(request_for(git_repo), observer)
        requests = len(server.requests)

    assert requests == 1  # the model's first answer and its tool call, then nothing
    assert result.stopped == "halt" and result.outcome == "failed"
    assert result.usage.steps == 2
    assert "halt" in result.summary


async def test_the_dollar_budget_stops_the_developer_once_spent(git_repo: Path) -> None:
    script = [text("thinking")] * 5
    observer = Recorder()
    with FakeLLMServer(script) as server:
        result = await developer(server).develop(
            request_for(git_repo, cost_budget_usd=0.025), observer
        )
        requests = len(server.requests)

    assert requests == 3  # $0.01 each: the fourth would start with $0.03 spent
    assert (result.outcome, result.stopped) == ("budget_exhausted", "cost_budget")
    assert result.reason == "budget_exhausted"
    assert result.usage.cost_usd == pytest.approx(0.03)


async def test_an_unpriced_model_under_a_dollar_budget_makes_no_call(git_repo: Path) -> None:
    observer = Recorder()
    with FakeLLMServer([call("submit", {"summary": "s"})]) as server:
        result = await developer(server, price=None).develop(
            request_for(git_repo, cost_budget_usd=5.0), observer
        )
        requests = len(server.requests)

    assert requests == 0 and observer.steps == []
    assert (result.outcome, result.stopped) == ("budget_exhausted", "unknown_price")
    assert "fake-model" in result.summary


async def test_an_accepted_unpriced_model_runs_and_its_turn_is_marked_unpriced(
    git_repo: Path,
) -> None:
    with FakeLLMServer([call("submit", {"summary": "s"})]) as server:
        result = await developer(server, price=None).develop(
            request_for(git_repo, cost_budget_usd=5.0, accept_unpriced=True), Recorder()
        )

    assert result.outcome == "submitted"
    assert result.usage.unpriced and result.usage.cost_usd == 0.0


async def test_each_reviewer_call_is_a_model_step_and_a_stop_ends_it_unapproved() -> None:
    observer = Recorder()
    with FakeLLMServer([text("not json"), text(APPROVE)]) as server:
        verdict = await reviewer(server).review(review_request(), observer)
    assert verdict.verdict == "approve"
    assert [(s.role, s.kind, s.error) for s in observer.steps] == [("reviewer", "model", False)] * 2
    assert verdict.usage.steps == 2 and verdict.usage.cost_usd == pytest.approx(0.02)

    with FakeLLMServer([text(APPROVE)]) as server:
        stopped = await reviewer(server).review(review_request(), Recorder(stop="pause"))
        requests = len(server.requests)
    assert requests == 0
    assert (stopped.verdict, stopped.stopped, stopped.reason) == (
        "request_changes",
        "pause",
        "abstain",
    )


async def test_a_reviewer_over_its_dollar_budget_stops_between_format_retries() -> None:
    with FakeLLMServer([text("not json")] * 3) as server:
        verdict = await reviewer(server).review(review_request(cost_budget_usd=0.015), Recorder())
        requests = len(server.requests)

    assert requests == 2
    assert (verdict.verdict, verdict.stopped, verdict.reason) == (
        "request_changes",
        "cost_budget",
        "budget_exhausted",
    )


async def test_the_scripted_developer_takes_one_tool_step_per_action(git_repo: Path) -> None:
    script = Script.model_validate(
        {"iterations": [{"developer": {"write": {"calc.py": NEW_CALC}, "delete": ["old.py"]}}]}
    )
    observer = Recorder()
    result = await ScriptedDeveloper(script).develop(request_for(git_repo), observer)

    assert [(s.kind, s.tool) for s in observer.steps] == [
        ("tool", "write_file"),
        ("tool", "delete"),
    ]
    assert result.usage.steps == 2 and result.outcome == "submitted"


def fixture_cli(path: Path, lines: list[dict[str, Any]], exit_code: int = 0) -> Path:
    """An executable that prints ``lines`` as JSON, one a line, like an agent CLI's stream."""
    body = "\n".join(json.dumps(line) for line in lines)
    path.write_text(
        f"#!{sys.executable}\nimport sys\nprint({body!r})\nsys.exit({exit_code})\n",
        encoding="utf-8",
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


CLAUDE_STREAM: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"},
    {
        "type": "assistant",
        "message": {
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "ls"}},
            ],
            "usage": {
                "input_tokens": 3,
                "output_tokens": 20,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 7,
            },
        },
    },
    {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": "tu1", "content": "ls: no", "is_error": True}
            ]
        },
    },
    {
        "type": "assistant",
        "message": {
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Done."}],
            "usage": {"input_tokens": 5, "output_tokens": 2},
        },
    },
    {"type": "result", "subtype": "success", "is_error": False, "result": "added sub"},
]

CODEX_STREAM: list[dict[str, Any]] = [
    {"type": "thread.started", "thread_id": "th1"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "plan"}},
    {
        "type": "item.started",
        "item": {"id": "i1", "type": "command_execution", "command": "pytest", "status": "x"},
    },
    {
        "type": "item.completed",
        "item": {
            "id": "i1",
            "type": "command_execution",
            "command": "pytest",
            "aggregated_output": "1 failed",
            "exit_code": 1,
            "status": "failed",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "i2",
            "type": "file_change",
            "changes": [{"path": "calc.py", "kind": "update"}],
            "status": "completed",
        },
    },
    {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "fixed"}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 50, "cached_input_tokens": 30, "output_tokens": 9},
    },
]


async def test_a_claude_stream_json_run_is_one_step_per_message_and_tool_result(
    git_repo: Path, tmp_path: Path
) -> None:
    cli = fixture_cli(tmp_path / "claude", CLAUDE_STREAM)
    agent = CommandDeveloper(
        f"{cli} -p --output-format stream-json --verbose",
        timeout_s=30,
        fencing=CommandFencing(sandbox="none"),
    )
    observer = Recorder()
    result = await agent.develop(request_for(git_repo), observer)

    assert [(s.kind, s.tool, s.error) for s in observer.steps] == [
        ("model", None, False),
        ("tool", "Bash", True),
        ("model", None, False),
    ]
    first = observer.steps[0]
    assert (first.input_tokens, first.output_tokens, first.cached_tokens) == (110, 20, 100)
    assert first.action_hash == action_hash("tool_calls", [["Bash", {"command": "ls"}]])
    assert observer.steps[1].action_hash == action_hash("Bash", {"command": "ls"})
    assert result.outcome == "submitted" and result.summary == "added sub"
    assert result.usage.steps == 3 and result.usage.model == "claude-sonnet-4-5"


async def test_a_cli_step_that_only_sleeps_is_a_wait_as_in_replay(
    git_repo: Path, tmp_path: Path
) -> None:
    sleeping = {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "sleep 5"}}
    stream = [dict(event) for event in CLAUDE_STREAM]
    stream[1] = {**stream[1], "message": {**stream[1]["message"], "content": [sleeping]}}
    cli = fixture_cli(tmp_path / "claude", stream)
    agent = CommandDeveloper(
        f"{cli} -p --output-format stream-json --verbose",
        timeout_s=30,
        fencing=CommandFencing(sandbox="none"),
    )
    observer = Recorder()
    await agent.develop(request_for(git_repo), observer)

    assert [(s.tool, s.wait) for s in observer.steps if s.kind == "tool"] == [("Bash", True)]


async def test_a_codex_json_run_is_one_step_per_command_and_file_change(
    git_repo: Path, tmp_path: Path
) -> None:
    cli = fixture_cli(tmp_path / "codex", CODEX_STREAM)
    agent = CommandDeveloper(
        f"{cli} exec --json {{prompt}}", timeout_s=30, fencing=CommandFencing(sandbox="none")
    )
    observer = Recorder()
    result = await agent.develop(request_for(git_repo), observer)

    assert [(s.kind, s.tool, s.error) for s in observer.steps] == [
        ("tool", "command_execution", True),
        ("tool", "file_change", False),
        ("model", None, False),
    ]
    assert observer.steps[0].action_hash == action_hash("command_execution", {"command": "pytest"})
    assert observer.steps[0].observation_hash == observation_hash("1 failed")
    last = observer.steps[-1]
    assert (last.input_tokens, last.cached_tokens, last.output_tokens) == (50, 30, 9)
    assert result.summary == "fixed"


async def test_a_cli_without_a_stream_is_one_step_per_run(git_repo: Path, tmp_path: Path) -> None:
    cli = tmp_path / "plain"
    cli.write_text("#!/bin/sh\necho done\n", encoding="utf-8")
    os.chmod(cli, 0o755)
    observer = Recorder()
    agent = CommandDeveloper(str(cli), timeout_s=30, fencing=CommandFencing(sandbox="none"))
    result = await agent.develop(request_for(git_repo), observer)

    assert result.outcome == "submitted", result.summary
    assert [(s.kind, s.tool, s.error) for s in observer.steps] == [("tool", "plain", False)]
    assert result.outcome == "submitted" and result.usage.steps == 1


async def test_a_streaming_cli_told_to_stop_is_killed_between_two_steps(
    git_repo: Path, tmp_path: Path
) -> None:
    cli = tmp_path / "claude"
    lines = "\n".join(json.dumps(line) for line in CLAUDE_STREAM[:3])
    cli.write_text(
        f"#!{sys.executable}\nimport time\nprint({lines!r}, flush=True)\ntime.sleep(60)\n",
        encoding="utf-8",
    )
    cli.chmod(0o755)
    agent = CommandDeveloper(
        f"{cli} -p --output-format stream-json", timeout_s=50, fencing=CommandFencing("none")
    )
    observer = Recorder(stop="halt", stop_at=2)
    result = await agent.develop(request_for(git_repo), observer)

    assert result.stopped == "halt" and result.outcome == "failed"
    assert [s.kind for s in observer.steps] == ["model", "tool"]


async def test_a_cli_without_a_stream_does_not_start_under_a_dollar_budget(
    git_repo: Path, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    cli = tmp_path / "plain"
    cli.write_text(f"#!/bin/sh\ntouch {ran}\n", encoding="utf-8")
    os.chmod(cli, 0o755)
    agent = CommandDeveloper(
        str(cli), timeout_s=30, fencing=CommandFencing(sandbox="none"), price=PRICE
    )
    result = await agent.develop(request_for(git_repo, cost_budget_usd=1.0), Recorder())

    assert not ran.exists()
    assert (result.outcome, result.stopped) == ("budget_exhausted", "unknown_price")
    assert "reports no tokens" in result.summary

    accepted = request_for(git_repo, cost_budget_usd=1.0, accept_unpriced=True)
    result = await agent.develop(accepted, Recorder())
    assert ran.exists() and result.outcome == "submitted" and result.usage.unpriced
