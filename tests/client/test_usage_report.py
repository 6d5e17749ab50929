"""``semspec usage``'s arithmetic: tasks' memos grouped by task, plan, day and model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from semspec.agents.protocol import TurnUsage
from semspec.client.usage_report import NO_PLAN, TaskSpending, day_of, usage_report
from semspec.workflow.task.usage import UsageTotals

DAY_1 = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)
DAY_2 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


def totals(*turns: TurnUsage) -> UsageTotals:
    spent = UsageTotals()
    for turn in turns:
        spent.add(turn)
    return spent


def turn(model: str, steps: int, cost: float | None, cached: int = 0) -> TurnUsage:
    return TurnUsage(
        steps=steps,
        input_tokens=1_000 * steps,
        output_tokens=100 * steps,
        cached_tokens=cached,
        cost_usd=cost or 0.0,
        model=model,
        unpriced=cost is None,
    )


def spending(task_id: str, usage: UsageTotals, **kw: object) -> TaskSpending:
    """Through the memo, as the command reads it."""
    return TaskSpending(task_id, UsageTotals.from_memo(usage.to_memo()), **kw)  # type: ignore[arg-type]


TASKS = [
    spending(
        "a",
        totals(turn("gpt-4o", 3, 0.30, cached=2_000), turn("claude-haiku-4-5", 1, 0.05)),
        plan_id="p1",
        started=DAY_1,
    ),
    spending("b", totals(turn("gpt-4o", 2, 0.20)), plan_id="p1", started=DAY_2, running=True),
    spending("c", totals(turn("local-qwen", 5, None)), started=DAY_2),
    spending("d", UsageTotals(), started=DAY_2),
]


def test_by_task_gives_one_row_per_task_with_its_tokens_and_dollars() -> None:
    report = usage_report(TASKS, "task")
    rows = {g.key: g for g in report.groups}
    assert list(rows) == ["a", "b", "c", "d"]
    a = rows["a"]
    assert (a.steps, a.input_tokens, a.cached_tokens, a.output_tokens) == (4, 4_000, 2_000, 400)
    assert a.cost_usd == pytest.approx(0.35)
    assert (rows["b"].running, rows["a"].running) == (1, 0)
    assert (rows["d"].steps, rows["d"].cost_usd) == (0, 0.0)


def test_a_group_with_an_unpriced_model_names_it_and_counts_its_tokens() -> None:
    report = usage_report(TASKS, "task")
    c = next(g for g in report.groups if g.key == "c")
    assert c.unpriced_models == ["local-qwen"]
    assert (c.steps, c.input_tokens, c.cost_usd) == (5, 5_000, 0.0)
    assert report.total.unpriced_models == ["local-qwen"]


def test_the_total_sums_every_task_once() -> None:
    for by in ("task", "plan", "day", "model"):
        total = usage_report(TASKS, by).total  # type: ignore[arg-type]
        assert (total.tasks, total.running, total.steps) == (4, 1, 11), by
        assert total.input_tokens == 11_000
        assert total.cost_usd == pytest.approx(0.55)


def test_by_plan_puts_lone_tasks_in_no_plan() -> None:
    rows = {g.key: g for g in usage_report(TASKS, "plan").groups}
    assert set(rows) == {"p1", NO_PLAN}
    assert (rows["p1"].tasks, rows["p1"].steps) == (2, 6)
    assert rows["p1"].cost_usd == pytest.approx(0.55)
    assert (rows[NO_PLAN].tasks, rows[NO_PLAN].unpriced_models) == (2, ["local-qwen"])


def test_by_day_groups_by_the_utc_start_date_in_order() -> None:
    report = usage_report(TASKS, "day")
    assert [(g.key, g.tasks) for g in report.groups] == [("2026-11-20", 1), ("2026-11-21", 3)]


def test_a_start_late_in_the_evening_elsewhere_is_the_next_utc_day() -> None:
    evening = datetime(2026, 11, 20, 20, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert day_of(evening) == "2026-11-21"
    assert day_of(None) == "(unknown)"


def test_by_model_splits_a_task_across_the_models_it_used() -> None:
    rows = {g.key: g for g in usage_report(TASKS, "model").groups}
    assert list(rows) == ["claude-haiku-4-5", "gpt-4o", "local-qwen"]
    assert (rows["gpt-4o"].tasks, rows["gpt-4o"].steps, rows["gpt-4o"].cached_tokens) == (
        2,
        5,
        2_000,
    )
    assert rows["gpt-4o"].cost_usd == pytest.approx(0.50)
    assert rows["gpt-4o"].unpriced_models == []
    assert rows["local-qwen"].unpriced_models == ["local-qwen"]


def test_json_has_the_grouping_the_groups_and_the_total() -> None:
    data = usage_report(TASKS, "plan").to_json()
    assert data["by"] == "plan"
    assert [g["key"] for g in data["groups"]] == [NO_PLAN, "p1"]
    assert data["total"] == {
        "key": "total",
        "tasks": 4,
        "running": 1,
        "steps": 11,
        "input_tokens": 11_000,
        "cached_tokens": 2_000,
        "output_tokens": 1_100,
        "cost_usd": 0.55,
        "unpriced_models": ["local-qwen"],
    }


def test_no_tasks_give_no_groups_and_a_zero_total() -> None:
    report = usage_report([], "day")
    assert report.groups == []
    assert (report.total.tasks, report.total.cost_usd) == (0, 0.0)
