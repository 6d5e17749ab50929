"""Model assignment by capability, sweet spot, recorded performance and cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.errors import ConfigError, InputError
from semspec.model.performance import (
    JsonPerformanceHistory,
    MemoryPerformanceHistory,
    PerformanceStats,
    TaskOutcome,
)
from semspec.model.profiles import ContextProfile, Cost, ModelSpec, Role
from semspec.workflow.assignment import assign_model, explain_assignment

FAILED = TaskOutcome(approved=False, iterations=4, tokens=30_000, latency_s=90.0)
APPROVED = TaskOutcome(approved=True, iterations=2, tokens=12_000, latency_s=40.0)


def spec(
    ident: str,
    sweet_spot: int = 20_000,
    price: float | None = 1.0,
    roles: tuple[Role, ...] = ("developer", "reviewer"),
) -> ModelSpec:
    return ModelSpec(
        id=ident,
        provider="openai-compatible",
        capabilities=roles,
        cost=Cost(input_per_1m=price, output_per_1m=price) if price is not None else None,
        context=ContextProfile(
            context_window=64_000,
            effective_context=60_000,
            sweet_spot=sweet_spot,
            system_prompt_overhead=2_000,
            recommended_max_file_tokens=min(8_000, sweet_spot),
        ),
    )


def test_models_without_the_role_are_left_out_with_a_reason() -> None:
    models = [spec("coder", roles=("developer",)), spec("judge", roles=("reviewer",))]
    result = explain_assignment(models, "reviewer", 1_000, MemoryPerformanceHistory())
    assert result.chosen == "judge"
    reasons = {c.model: c for c in result.candidates}
    assert not reasons["coder"].eligible
    assert "cannot take the reviewer role" in reasons["coder"].reason


def test_models_whose_sweet_spot_is_too_small_are_left_out() -> None:
    models = [spec("small", sweet_spot=10_000, price=0.1), spec("large", sweet_spot=40_000)]
    result = explain_assignment(models, "developer", 9_000, MemoryPerformanceHistory())
    assert result.chosen == "large"
    small = next(c for c in result.candidates if c.model == "small")
    assert "needs 11,000 tokens" in small.reason and "10,000" in small.reason


def test_without_history_the_cheapest_model_wins_then_the_id() -> None:
    models = [spec("b-model", price=1.0), spec("a-model", price=1.0), spec("cheap", price=0.5)]
    result = explain_assignment(models, "developer", 1_000, MemoryPerformanceHistory())
    assert [c.model for c in result.candidates] == ["cheap", "a-model", "b-model"]
    assert [c.rank for c in result.candidates] == [1, 2, 3]


def test_unknown_price_ranks_after_known_prices() -> None:
    models = [spec("local", price=None), spec("hosted", price=30.0)]
    result = explain_assignment(models, "developer", 1_000, MemoryPerformanceHistory())
    assert result.chosen == "hosted"


def test_assignment_changes_after_recorded_failures_of_the_first_choice(tmp_path: Path) -> None:
    history = JsonPerformanceHistory.for_repo(tmp_path)
    models = [spec("cheap", price=0.5), spec("pricier", price=3.0)]
    assert assign_model(models, "developer", 1_000, history) == "cheap"
    history.record("cheap", "developer", FAILED)
    history.record("cheap", "developer", FAILED)
    result = explain_assignment(models, "developer", 1_000, history)
    assert result.chosen == "pricier"
    cheap = next(c for c in result.candidates if c.model == "cheap")
    assert cheap.rank == 2
    assert "0/2 approved" in cheap.reason


def test_failures_in_one_role_do_not_affect_the_other() -> None:
    history = MemoryPerformanceHistory()
    models = [spec("cheap", price=0.5), spec("pricier", price=3.0)]
    for _ in range(3):
        history.record("cheap", "developer", FAILED)
    assert assign_model(models, "reviewer", 1_000, history) == "cheap"
    assert assign_model(models, "developer", 1_000, history) == "pricier"


def test_equal_approval_rates_prefer_fewer_iterations() -> None:
    history = MemoryPerformanceHistory()
    history.record("slow", "developer", TaskOutcome(True, 5, 10_000, 10.0))
    history.record("fast", "developer", TaskOutcome(True, 1, 10_000, 10.0))
    models = [spec("slow", price=0.1), spec("fast", price=9.0)]
    assert assign_model(models, "developer", 1_000, history) == "fast"


def test_no_qualifying_model_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no model can take the developer role"):
        assign_model(
            [spec("tiny", sweet_spot=3_000)], "developer", 5_000, MemoryPerformanceHistory()
        )


def test_json_history_keeps_totals_across_instances(tmp_path: Path) -> None:
    JsonPerformanceHistory.for_repo(tmp_path).record("m", "reviewer", APPROVED)
    JsonPerformanceHistory.for_repo(tmp_path).record("m", "reviewer", FAILED)
    stats = JsonPerformanceHistory.for_repo(tmp_path).stats("m", "reviewer")
    assert stats == PerformanceStats(
        tasks=2, approved=1, iterations=6, approved_tokens=12_000, latency_s=130.0
    )
    assert stats.approval_rate == 0.5
    assert stats.mean_iterations == 3.0
    assert stats.tokens_per_approval == 12_000
    assert (tmp_path / ".semspec" / "run" / "performance.json").is_file()


def test_a_corrupt_history_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / ".semspec" / "run" / "performance.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        JsonPerformanceHistory.for_repo(tmp_path).stats("m", "developer")
    assert caught.value.path == str(path)


def test_models_assign_explains_the_choice_as_json(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('hi')\n" * 50, encoding="utf-8")
    from semspec.core.config.models import GraphConfig
    from semspec.graph.access import open_store
    from semspec.workflow.performance_graph import GraphPerformanceHistory

    store = open_store(GraphConfig(), tmp_path)
    try:
        for n in range(3):
            GraphPerformanceHistory(store).record_task(f"t{n}", "gpt-4o-mini", "reviewer", FAILED)
    finally:
        store.close()
    args = ["--repo", str(tmp_path), "models", "assign", "--role", "reviewer"]
    args += ["--file", str(tmp_path / "a.py"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["role"] == "reviewer"
    assert data["chosen"] not in (None, "gpt-4o-mini", "scripted")
    ids = [c["model"] for c in data["candidates"]]
    assert "scripted" not in ids
    demoted = next(c for c in data["candidates"] if c["model"] == "gpt-4o-mini")
    assert "0/3 approved" in demoted["reason"]


def test_models_assign_rejects_an_unknown_role(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    args = ["--repo", str(tmp_path), "models", "assign", "--role", "tester", "--file", "a.py"]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, InputError)
    assert "--role" in str(result.exception)
