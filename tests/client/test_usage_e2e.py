"""``semspec usage`` over tasks run through the CLI on the embedded stack by LLM agents.

Both roles are the ``openai`` provider pointed at the fake OpenAI-compatible server; each reply
reports 1,000 prompt tokens, 400 of them read from the prompt cache, and 50 completion tokens.
The repository's model registry prices the model, so each call costs
(600 x $100 + 400 x $10 + 50 x $200) / 1M = $0.074: the cached part at its own price, once.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer, FakeReply, cached
from tests.fakes.llm_task import TASK_CRITERION, approve_reply, developer_replies, fake_model_entry
from tests.support.stack import Stack, check_gate, running_stack, sample_config

PRICE = {
    "input_per_1m": 100.0,
    "cached_input_per_1m": 10.0,
    "output_per_1m": 200.0,
    "source": "test",
    "as_of": "2026-11-26",
}
CALL_USD = (600 * 100 + 400 * 10 + 50 * 200) / 1_000_000
LONE, PLANNED, PLAN = "usage-lone", "usage-planned", "usage-plan"


def with_usage(reply: FakeReply) -> FakeReply:
    return cached(replace(reply, usage=(1_000, 50)), read=400)


def one_task_of_replies(llm: FakeLLMServer) -> None:
    llm.push(*(with_usage(r) for r in developer_replies()), route="developer")
    llm.push(with_usage(approve_reply()), route="reviewer")


def usage(stack: Stack, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = stack.cli_json("usage", *args)
    return data


def test_usage_shows_the_tokens_and_dollars_of_tasks_run_by_llm_agents(tmp_path: Path) -> None:
    with FakeLLMServer.for_roles() as llm:
        role = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        config = sample_config([check_gate()], models={"developer": role, "reviewer": role})
        entry = {**fake_model_entry(llm.base_url), "cost": PRICE}
        registry = {".semspec/models.yaml": yaml.safe_dump({"models": {"fake-model": entry}})}
        with running_stack(tmp_path, config, registry) as stack:
            one_task_of_replies(llm)
            lone = stack.cli(
                "task", "submit", "Add a sub function", "--id", LONE, "--file", "calc.py",
                "--criterion", TASK_CRITERION, "--wait", timeout=180,
            )  # fmt: skip
            assert lone.returncode == 0, lone.stderr
            one_task_of_replies(llm)
            plan = {
                "id": PLAN,
                "title": "one planned task",
                "tasks": [
                    {"id": PLANNED, "title": "Add sub", "files": ["calc.py"], "criteria": ["sub"]}
                ],
            }
            plan_file = tmp_path / "plan.yaml"
            plan_file.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
            submitted = stack.cli("plan", "submit", str(plan_file), timeout=120)
            assert submitted.returncode == 0, submitted.stderr
            stack.wait_status(PLANNED, lambda s: bool(s["outcome"]), 120)

            by_task = usage(stack)
            by_plan = usage(stack, "--by", "plan")
            by_model = usage(stack, "--by", "model")
            table = stack.cli("usage").stdout
        calls = len(llm.requests)

    assert calls == 12  # five developer calls and one review, twice
    rows = {g["key"]: g for g in by_task["groups"]}
    assert set(rows) == {LONE, PLANNED}
    for row in rows.values():
        assert (row["input_tokens"], row["cached_tokens"], row["output_tokens"]) == (
            6_000,
            2_400,
            300,
        )
        assert row["cost_usd"] == pytest.approx(6 * CALL_USD)
        assert row["steps"] >= 6 and row["unpriced_models"] == []
    total = by_task["total"]
    assert (total["tasks"], total["input_tokens"], total["cached_tokens"]) == (2, 12_000, 4_800)
    assert total["cost_usd"] == pytest.approx(12 * CALL_USD)
    plans = {g["key"]: (g["tasks"], g["input_tokens"]) for g in by_plan["groups"]}
    assert plans == {PLAN: (1, 6_000), "(no plan)": (1, 6_000)}
    assert [(g["key"], g["tasks"]) for g in by_model["groups"]] == [("fake-model", 2)]
    assert f"${12 * CALL_USD:,.4f}" in table, table
