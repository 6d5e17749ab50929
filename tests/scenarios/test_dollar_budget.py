"""Scenario: dollar budgets that fail closed, on the CLI, with LLM agents on the fake server.

Both roles are the ``openai`` provider pointed at the fake OpenAI-compatible server; every reply
reports 10 prompt and 5 completion tokens, and the project's model registry prices the model at
$1,000 / $2,000 per million, so each model call costs exactly $0.02.

- A task whose budget ($0.05) runs out in its developer's third call pauses, escalates once with
  ``budget_exhausted``, continues after ``extend-budget --extra-usd`` and is approved; its cost
  shows per iteration in ``task status``.
- A model without a price under a budget escalates (``unknown_price``, naming the model) before
  any call; one ``approve`` lets it run for the rest of the task without asking again.
- Without a budget an unpriced model just runs.
- A plan's budget is shared by its two parallel tasks; each stops at its share.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer, FakeReply, call
from tests.fakes.llm_task import (
    NEW_CALC,
    TASK_CRITERION,
    approve_reply,
    developer_replies,
    fake_model_entry,
)
from tests.support.scenario_tasks import (
    EXIT_APPROVED,
    EXIT_ESCALATED,
    entries,
    file_at,
    new_id,
    resolve,
)
from tests.support.stack import Stack, check_gate, make_sample_repo

CALL_USD = 0.02
"""What one fake model call costs at the registry price below (10 in, 5 out tokens)."""
PRICE = {"input_per_1m": 1_000.0, "output_per_1m": 2_000.0, "source": "test", "as_of": "2026-11-01"}


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    """The fake LLM for one test; its replies are pushed per role by the test."""
    with FakeLLMServer.for_roles() as server:
        yield server


def project(
    stack: Stack, llm: FakeLLMServer, name: str, budget: float | None, priced: bool = True
) -> Path:
    """A sample repository on the stack whose roles use the fake LLM, with ``budget`` as
    ``loop.max_cost_usd`` and the model priced in its registry (or not)."""
    role = {
        "provider": "openai",
        "model": "fake-model",
        "base_url": llm.base_url,
        "timeout_s": 20,
        "max_steps": 12,
    }
    loop: dict[str, Any] = {"max_retries": 1, "activity_attempts": 2}
    if budget is not None:
        loop["max_cost_usd"] = budget
    entry = fake_model_entry(llm.base_url)
    if priced:
        entry["cost"] = PRICE
    config = {
        "project": {"name": name, "base_branch": "main"},
        "gates": {"preset": "none", "additional": [check_gate()]},
        "loop": loop,
        "models": {"developer": role, "reviewer": role},
        "services": {
            "nats": stack.nats_section(),
            "temporal": {"address": stack.temporal_address()},
            "run_dir": str(stack.root / name / "run"),
        },
        "security": {"owner_key": str(stack.owner_key_path)},
    }
    files = {
        # Its own root commit: the monitor must not take it for a clone of another project.
        "README.md": f"# dollar budget scenario {name}\n",
        ".semspec/models.yaml": yaml.safe_dump({"models": {"fake-model": entry}}),
    }
    return make_sample_repo(stack.root / name / "repo", config, files)


def submit(stack: Stack, repo: Path, task_id: str) -> tuple[int, dict[str, Any]]:
    """``task submit --wait --json`` of the sample task (add ``sub`` to calc.py)."""
    done = stack.cli(
        "task", "submit", "Add a sub function", "--id", task_id, "--file", "calc.py",
        "--criterion", TASK_CRITERION, "--wait", "--json", repo=repo, timeout=180,
    )  # fmt: skip
    assert done.stdout, f"task submit printed nothing (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout)


def wait_done(stack: Stack, repo: Path, task_id: str) -> dict[str, Any]:
    return stack.wait_status(task_id, lambda s: bool(s["outcome"]), 120, repo=repo)


def escalation_reasons(status: dict[str, Any]) -> list[str]:
    return [m.split(":")[0] for m in entries(status, "escalation")]


def test_a_task_past_its_dollar_budget_waits_once_and_goes_on_with_more_dollars(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo = project(stack, llm, "dollars-spent", budget=0.05)
    # The first turn reads three times: $0.06 after the third call is past the $0.05.
    llm.push(*developer_replies()[:3], route="developer")
    task_id = new_id("dollars")

    code, status = submit(stack, repo, task_id)

    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    pending = status["pending_escalation"]
    assert pending["reason"] == "budget_exhausted"
    assert pending["message"].startswith("dollar budget spent: $0.0600 of $0.0500")
    assert len(llm.requests_for("developer")) == 3  # stopped before a fourth call
    assert status["usage"]["cost_usd"] == pytest.approx(3 * CALL_USD)
    assert status["budget_usd"] == 0.05
    shown = stack.cli("task", "status", task_id, repo=repo).stdout
    assert "cost: $0.0600 of $0.0500 budget" in shown
    assert "--action extend-budget --extra-usd N" in shown

    llm.push(*developer_replies(), route="developer")
    llm.push(approve_reply(), route="reviewer")
    ack = resolve(stack, repo, task_id, "extend-budget", "--extra-usd", "1")
    assert ack["action"] == "extend_budget"
    done = wait_done(stack, repo, task_id)

    assert done["outcome"] == "approved", json.dumps(done)[-3000:]
    assert escalation_reasons(done) == ["budget_exhausted"]
    assert done["budget_usd"] == pytest.approx(1.05)
    # Three calls, then the whole developer turn again (five) and one review.
    assert done["usage"]["cost_usd"] == pytest.approx(9 * CALL_USD)
    assert done["iteration_costs"] == pytest.approx([9 * CALL_USD])
    assert "(+$1.00)" in entries(done, "resolution")[0]
    assert file_at(repo, done["commit_id"], "calc.py") == NEW_CALC


def test_an_unpriced_model_under_a_budget_asks_once_naming_it_before_any_call(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo = project(stack, llm, "dollars-unpriced", budget=5.0, priced=False)
    task_id = new_id("unpriced")

    code, status = submit(stack, repo, task_id)

    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    pending = status["pending_escalation"]
    assert pending["reason"] == "unknown_price"
    assert "model fake-model has no price" in pending["message"]
    assert llm.requests == []  # no model call was made
    show = stack.cli("escalations", "show", task_id, repo=repo).stdout
    assert "run the model without a price for the rest of the task" in show

    llm.push(*developer_replies(), route="developer")
    llm.push(approve_reply(), route="reviewer")
    resolve(stack, repo, task_id, "approve")
    done = wait_done(stack, repo, task_id)

    # The developer and the reviewer both ran unpriced: the one answer covered them.
    assert done["outcome"] == "approved", json.dumps(done)[-3000:]
    assert escalation_reasons(done) == ["unknown_price"]
    assert done["usage"]["unpriced_models"] == ["fake-model"]
    assert done["usage"]["cost_usd"] == 0


def test_without_a_budget_an_unpriced_model_runs_without_asking(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo = project(stack, llm, "dollars-none", budget=None, priced=False)
    llm.push(*developer_replies(), route="developer")
    llm.push(approve_reply(), route="reviewer")

    code, status = submit(stack, repo, new_id("no-budget"))

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert escalation_reasons(status) == []
    assert status["budget_usd"] is None
    assert len(llm.requests) == 6


def test_a_plans_budget_is_shared_by_its_parallel_tasks_and_stops_each_at_its_share(
    stack: Stack, llm: FakeLLMServer
) -> None:
    repo = project(stack, llm, "dollars-plan", budget=None)
    # Two tasks at once share $0.05: $0.025 each, so each stops after its second call.
    listing: list[FakeReply] = [call("list_dir", {"path": "."}) for _ in range(8)]
    llm.push(*listing, route="developer")
    first, second, plan_id = new_id("plan-a"), new_id("plan-b"), new_id("plan")
    plan = {
        "id": plan_id,
        "title": "two parts on a shared budget",
        "max_cost_usd": 0.05,
        "tasks": [
            {"id": first, "title": "Add sub", "files": ["calc.py"], "criteria": ["sub"]},
            {"id": second, "title": "Add notes", "files": ["NOTES.md"], "criteria": ["notes"]},
        ],
    }
    plan_file = stack.root / "dollars-plan" / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")

    done = stack.cli("plan", "submit", str(plan_file), "--json", repo=repo, timeout=120)
    assert done.returncode == 0, done.stderr
    escalated = [
        stack.wait_status(t, lambda s: s["pending_escalation"] is not None, 120, repo=repo)
        for t in (first, second)
    ]

    for status in escalated:
        assert status["pending_escalation"]["reason"] == "budget_exhausted"
        assert "share of plan" in status["pending_escalation"]["message"]
        assert status["budget_usd"] == pytest.approx(0.025)
        assert status["usage"]["cost_usd"] == pytest.approx(2 * CALL_USD)
    assert len(llm.requests_for("developer")) == 4
    # While both wait, the plan's status shows what each running task spent so far.
    running = stack.cli_json("plan", "status", plan_id, repo=repo)
    assert [t["cost_usd"] for t in running["tasks"]] == pytest.approx([2 * CALL_USD] * 2)
    shown = stack.cli("plan", "status", plan_id, repo=repo)
    assert f"cost: ${4 * CALL_USD:.4f} of $0.0500" in shown.stdout, shown.stdout
    for task_id in (first, second):
        resolve(stack, repo, task_id, "abort")
    ended = plan_done(stack, repo, plan_id)
    assert ended["usage"]["cost_usd"] == pytest.approx(4 * CALL_USD)
    assert [t["cost_usd"] for t in ended["tasks"]] == pytest.approx([2 * CALL_USD] * 2)


def plan_done(stack: Stack, repo: Path, plan_id: str) -> dict[str, Any]:
    """``plan status --json`` once the plan is done (bounded wait)."""
    deadline = time.monotonic() + 60
    while True:
        status: dict[str, Any] = stack.cli_json("plan", "status", plan_id, repo=repo)
        if status["state"] == "done":
            return status
        assert time.monotonic() < deadline, f"plan {plan_id} never ended: {status}"
        time.sleep(0.5)
