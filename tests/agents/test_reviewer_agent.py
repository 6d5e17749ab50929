"""The LLM reviewer against the fake server: schema, bounded format retries, bounded enrichment."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from semspec.agents.evidence import EvidenceBlock, EvidenceType
from semspec.agents.evidence_sources import WorktreeEvidence
from semspec.agents.llm_reviewer import LLMReviewer, ReviewTelemetry
from semspec.agents.protocol import ReviewRequest
from semspec.model.providers.openai_chat import OpenAIChatProvider
from tests.fakes.llm_server import FakeLLMServer, text

REQUEST = ReviewRequest(
    task_id="t7",
    title="Add sub",
    description="Add sub(a, b).",
    criteria=["sub(3, 1) == 2"],
    task_files=["calc.py"],
    diff="+def sub(a, b):\n+    return a - b\n",
    iteration=1,
    gate_summary="test: passed",
)


def verdict(kind: str, **extra: Any) -> str:
    return json.dumps({"verdict": kind, **extra})


APPROVE = verdict(
    "approve",
    summary="looks right",
    noted_patterns=[{"name": "small functions", "description": "one job each"}],
)
NEED_FILES = verdict(
    "need_more_info", summary="is sub exported?", needed_evidence=["task_file_contents"]
)


class NothingNew:
    """An evidence source that finds nothing, like one whose sources are empty."""

    async def fetch(
        self, request: ReviewRequest, types: Sequence[EvidenceType]
    ) -> list[EvidenceBlock]:
        return []


def reviewer(server: FakeLLMServer, evidence: Any = None) -> LLMReviewer:
    provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
    return LLMReviewer(provider, evidence)


async def test_valid_verdict_becomes_a_review_verdict() -> None:
    findings = [
        {
            "message": "no test for sub",
            "severity": "warning",
            "file": "calc.py",
            "line": 4,
            "sop_id": "sop:testing",
        }
    ]
    reply = verdict("request_changes", summary="needs a test", findings=findings)
    with FakeLLMServer([text(reply, usage=(100, 20))]) as server:
        result = await reviewer(server).review(REQUEST)
        prompt = server.requests[0].body["messages"][1]["content"]

    assert result.verdict == "request_changes"
    assert result.reason is None
    assert result.findings[0].file == "calc.py"
    assert result.findings[0].line == 4
    assert result.findings[0].sop_id == "sop:testing"
    assert result.tokens_used == 120
    assert "+def sub(a, b):" in prompt
    assert "test: passed" in prompt


async def test_verdict_inside_a_code_fence_is_accepted() -> None:
    with FakeLLMServer([text(f"Here you go:\n```json\n{APPROVE}\n```")]) as server:
        result = await reviewer(server).review(REQUEST)

    assert result.verdict == "approve"
    assert result.noted_patterns[0].name == "small functions"


async def test_malformed_output_is_retried_with_the_error_then_accepted() -> None:
    bad_schema = verdict("request_changes", summary="no findings given")
    with FakeLLMServer([text("I think it is fine"), text(bad_schema), text(APPROVE)]) as server:
        result = await reviewer(server).review(REQUEST)
        correction = server.last_messages()[-1]["content"]

    assert result.verdict == "approve"
    assert len(server.requests) == 3
    assert "at least one finding" in correction


async def test_three_malformed_replies_make_the_reviewer_abstain() -> None:
    with FakeLLMServer([text("nope"), text("{"), text(verdict("maybe"))]) as server:
        agent = reviewer(server)
        result = await agent.review(REQUEST)

    assert len(server.requests) == 3
    assert result.verdict == "request_changes"
    assert result.reason == "abstain"
    assert [t.event for t in agent.telemetry] == ["format_invalid"] * 3 + ["abstain"]


async def test_more_than_two_evidence_types_is_malformed() -> None:
    greedy = verdict(
        "need_more_info",
        needed_evidence=["task_file_contents", "gate_logs", "sop_chunks"],
    )
    unknown = verdict("need_more_info", needed_evidence=["the_whole_repo"])
    with FakeLLMServer([text(greedy), text(unknown), text(APPROVE)]) as server:
        result = await reviewer(server).review(REQUEST)

    assert result.verdict == "approve"
    assert len(server.requests) == 3


async def test_need_more_info_with_new_evidence_calls_the_reviewer_again(git_repo: Path) -> None:
    events: list[ReviewTelemetry] = []
    with FakeLLMServer([text(NEED_FILES), text(APPROVE)]) as server:
        provider = OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5)
        agent = LLMReviewer(provider, WorktreeEvidence(git_repo), on_telemetry=events.append)
        result = await agent.review(REQUEST)
        second_prompt = server.requests[1].body["messages"][1]["content"]

    assert result.verdict == "approve"
    assert result.reason is None
    assert "### task_file_contents: calc.py" in second_prompt
    assert "return a + b" in second_prompt
    retry = next(e for e in events if e.event == "continuity_enrichment_retry_called")
    assert retry.fingerprint_before != retry.fingerprint_after
    assert retry.loop_cycle_id == "t7:1:review"
    assert retry.retry_attempt_index == 1
    assert retry.retry_budget_remaining == 0


async def test_need_more_info_without_new_evidence_stops_with_a_grounded_question() -> None:
    with FakeLLMServer([text(NEED_FILES), text(APPROVE)]) as server:
        agent = reviewer(server, NothingNew())
        result = await agent.review(REQUEST)

    assert len(server.requests) == 1
    assert result.verdict == "need_more_info"
    assert result.reason == "no_new_evidence"
    assert "task file contents" in result.summary
    assert "is sub exported?" in result.summary
    unchanged = agent.telemetry[-1]
    assert unchanged.event == "continuity_enrichment_fingerprint_unchanged"
    assert unchanged.fingerprint_before == unchanged.fingerprint_after


async def test_need_more_info_twice_exhausts_the_enrichment_budget(git_repo: Path) -> None:
    with FakeLLMServer([text(NEED_FILES), text(NEED_FILES), text(APPROVE)]) as server:
        result = await reviewer(server, WorktreeEvidence(git_repo)).review(REQUEST)

    assert len(server.requests) == 2
    assert result.verdict == "need_more_info"
    assert result.reason == "budget_exhausted"
    assert result.needed_evidence == ["task_file_contents"]
