"""Counting and errors in the streams of Claude Code and Codex CLI, as their pinned versions
print them."""

from __future__ import annotations

import json
from pathlib import Path

from semspec.agents.cli_streams import CODEX_OVERHEAD_TOKENS, ClaudeStream, CodexStream, ModelStep
from semspec.agents.command_developer import CommandDeveloper
from semspec.agents.protocol import TurnUsage
from semspec.workflow.task.usage import UsageTotals
from tests.agents.test_agent_steps import Recorder
from tests.agents.test_developer_agent_factory import request_for, script_command

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


def claude_line(ident: str, output_tokens: int) -> str:
    usage = {"input_tokens": 100, "output_tokens": output_tokens}
    return json.dumps({"type": "assistant", "message": {"id": ident, "usage": usage}})


def test_claudes_result_totals_add_what_its_message_lines_left_out() -> None:
    # As Claude Code 2.1.197 prints it: each message line has one output token (its start),
    # and modelUsage holds the final counts, the session-title side request included.
    stream = ClaudeStream()
    result = {
        "type": "result",
        "subtype": "success",
        "result": "Added sub.",
        "usage": {"input_tokens": 200, "output_tokens": 40},
        "modelUsage": {"claude-x": {"inputTokens": 230, "outputTokens": 47}},
    }
    lines = [claude_line("m1", 1), claude_line("m2", 1), json.dumps(result)]
    steps = [step for line in lines for step in stream.feed(line)] + stream.finish()

    usage = [s.reply.usage for s in steps if isinstance(s, ModelStep)]
    assert sum(u.prompt_tokens for u in usage) == 230
    assert sum(u.completion_tokens for u in usage) == 47


def test_a_codex_run_stopped_before_its_turn_completed_gets_an_estimate() -> None:
    stream = CodexStream(prompt_chars=4_000)
    item = {"id": "i1", "type": "command_execution", "command": "ls", "exit_code": 0}
    for _ in range(3):
        stream.feed(json.dumps({"type": "item.completed", "item": item}))

    [estimate] = stream.finish()

    assert isinstance(estimate, ModelStep) and estimate.estimated
    assert estimate.reply.usage.prompt_tokens >= 3 * (CODEX_OVERHEAD_TOKENS + 1_000)
    assert estimate.reply.usage.completion_tokens >= 3


def test_a_completed_codex_turn_is_counted_as_reported_not_estimated() -> None:
    stream = CodexStream(prompt_chars=4_000)
    item = {"id": "i1", "type": "command_execution", "command": "ls", "exit_code": 0}
    stream.feed(json.dumps({"type": "item.completed", "item": item}))
    usage = {"input_tokens": 9_000, "output_tokens": 30}
    [turn] = stream.feed(json.dumps({"type": "turn.completed", "usage": usage}))

    assert isinstance(turn, ModelStep) and turn.reply.usage.prompt_tokens == 9_000
    assert stream.finish() == []


async def test_a_timed_out_run_without_a_stream_still_records_its_step(git_repo: Path) -> None:
    hang = "import time; time.sleep(60)"
    agent = CommandDeveloper(script_command(git_repo, hang), timeout_s=0.5)
    recorder = Recorder()

    result = await agent.develop(request_for(git_repo), recorder)

    assert result.reason == "timeout"
    assert [(s.kind, s.error) for s in recorder.steps] == [("tool", True)]
    assert result.usage.steps == 1


def test_a_claude_run_killed_before_its_result_estimates_the_output_left_out() -> None:
    stream = ClaudeStream()
    text = "x" * 400  # about 100 tokens, reported as 1
    line = {
        "type": "assistant",
        "message": {
            "id": "m1",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 100, "output_tokens": 1},
        },
    }
    steps = stream.feed(json.dumps(line)) + stream.finish()

    estimates = [s for s in steps if isinstance(s, ModelStep) and s.estimated]
    assert [s.reply.usage.completion_tokens for s in estimates] == [99]


def test_estimated_tokens_stay_marked_in_the_tasks_usage_and_its_memo() -> None:
    totals = UsageTotals()
    totals.add(TurnUsage(steps=3, input_tokens=27_000, output_tokens=9, model="gpt-4.1"))
    totals.add(TurnUsage(steps=1, input_tokens=100, model="gpt-4.1", estimated=True))
    totals.add(TurnUsage(steps=1, input_tokens=10, model="fake-model"))

    read_back = UsageTotals.from_memo(totals.to_memo())

    assert [read_back.by_model[m].estimated for m in ("gpt-4.1", "fake-model")] == [True, False]
