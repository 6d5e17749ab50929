"""The task's dollar budget as pure rules: the cap, each turn's budget, when to escalate, grants,
a plan's shares, and what a checkpoint carries.

No server: ``tests/workflow/test_dollar_budget.py`` shows the same rules holding in a running task.
"""

from __future__ import annotations

import pytest

from semspec.agents.protocol import TurnUsage
from semspec.core.reasons import FallbackReason
from semspec.workflow.context.monitor import ContextTracker
from semspec.workflow.task.dollars import (
    DollarBudget,
    add_iteration_cost,
    plan_share,
    unpriced_message,
    usd,
)
from semspec.workflow.task.loop.carry import LoopState, carry_over, restore
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.messages import (
    CheckpointStep,
    Escalation,
    LoopLimits,
    Resolution,
    TaskInput,
    TaskSpec,
    TaskStatus,
)
from semspec.workflow.task.usage import UsageTotals


def _spent(cost_usd: float, model: str = "m", unpriced: bool = False) -> UsageTotals:
    totals = UsageTotals()
    totals.add(TurnUsage(steps=1, cost_usd=cost_usd, model=model, unpriced=unpriced))
    return totals


def test_without_a_budget_nothing_is_capped_or_asked() -> None:
    budget = DollarBudget()
    assert budget.cap_usd is None
    assert budget.turn_budget(123.0) is None
    assert budget.check(_spent(1_000.0, unpriced=True)) is None


@pytest.mark.parametrize(
    ("task", "share", "granted", "cap"),
    [(1.0, None, 0.0, 1.0), (None, 0.5, 0.0, 0.5), (1.0, 0.5, 0.0, 0.5), (1.0, 2.0, 0.25, 1.25)],
    ids=["task-only", "share-only", "smaller-share", "granted-on-top"],
)
def test_the_cap_is_the_smaller_budget_plus_what_was_granted(
    task: float | None, share: float | None, granted: float, cap: float
) -> None:
    assert DollarBudget(task, share, granted_usd=granted).cap_usd == cap


def test_a_turn_gets_what_is_left_and_never_less_than_nothing() -> None:
    budget = DollarBudget(1.0)
    assert budget.turn_budget(0.25) == 0.75
    assert budget.turn_budget(1.5) == 0.0


def test_the_budget_holds_below_the_cap_and_escalates_at_it() -> None:
    budget = DollarBudget(0.01)
    assert budget.check(_spent(0.0099)) is None
    stop = budget.check(_spent(0.01))
    assert stop is not None
    assert stop.reason == FallbackReason.BUDGET_EXHAUSTED
    assert stop.message == "dollar budget spent: $0.0100 of $0.0100 (task budget $0.0100)"


def test_the_message_names_every_budget_that_makes_the_cap() -> None:
    budget = DollarBudget(2.0, 0.5, "plan p1", granted_usd=0.5)
    stop = budget.check(_spent(1.0))
    assert stop is not None
    assert stop.message == (
        "dollar budget spent: $1.00 of $1.00 "
        "(task budget $2.00; share of plan p1's budget $0.5000; granted $0.5000)"
    )


def test_an_unpriced_model_escalates_first_naming_it_until_a_human_accepts() -> None:
    budget = DollarBudget(1.0)
    spent = _spent(5.0, model="local-llm", unpriced=True)
    stop = budget.check(spent)
    assert stop is not None
    assert stop.reason == FallbackReason.UNKNOWN_PRICE
    assert "model local-llm has no price" in stop.message
    budget.accept_unpriced = True
    stop = budget.check(spent)
    assert stop is not None and stop.reason == FallbackReason.BUDGET_EXHAUSTED


def test_an_unpriced_message_names_each_model_once_in_order() -> None:
    assert unpriced_message(["b", "a"]).startswith("model a, b has no price")


def test_a_grant_adds_what_it_names_or_else_the_tasks_own_budget() -> None:
    budget = DollarBudget(0.5, 2.0)
    assert budget.grant(0.25) == 0.25
    assert budget.grant(0.0) == 0.5
    assert budget.cap_usd == 1.25
    share_only = DollarBudget(None, 2.0)
    assert share_only.grant(0.0) == 2.0


def test_iteration_costs_grow_to_the_iteration_and_add_up() -> None:
    costs: list[float] = []
    add_iteration_cost(costs, 2, 0.5)
    add_iteration_cost(costs, 2, 0.25)
    add_iteration_cost(costs, 0, 9.0)  # before the first iteration: nowhere to put it
    assert costs == [0.0, 0.75]


@pytest.mark.parametrize(
    ("budget", "finished", "running", "starting", "share"),
    [
        (None, 5.0, [], 1, None),
        (1.0, 0.0, [], 1, 1.0),
        (1.0, 0.0, [], 2, 0.5),
        (1.0, 0.25, [0.5], 1, 0.25),
        (1.0, 0.75, [0.5], 1, 0.0),
    ],
    ids=["no-budget", "alone", "two-at-once", "after-one-finished", "nothing-free"],
)
def test_a_plan_splits_what_is_free_among_the_tasks_starting_now(
    budget: float | None, finished: float, running: list[float], starting: int, share: float | None
) -> None:
    assert plan_share(budget, finished, running, starting) == share


def test_dollars_read_as_cents_above_a_dollar_and_four_decimals_below() -> None:
    assert (usd(12.345), usd(0.01234)) == ("$12.35", "$0.0123")


def test_a_checkpoint_carries_the_spending_and_what_humans_said() -> None:
    inp = TaskInput(
        TaskSpec("t1", "Title", "/repo", plan_id="p1"),
        gates=[],
        limits=LoopLimits(max_cost_usd=1.0),
        share_usd=0.5,
    )
    state = LoopState.start(inp)
    state.dollars.granted_usd, state.dollars.accept_unpriced = 0.25, True
    status = TaskStatus("t1", "Title", "gates", 3, 0, 3, usage=_spent(0.6))
    status.iteration_costs = [0.1, 0.5]
    cont = carry_over(inp, status, RiskSignals(), state, CheckpointStep("", "c0ffee", []), 1, 1.0)

    new_status = TaskStatus("t1", "Title", "starting", 0, 0, 3)
    new_state = LoopState.start(inp)
    restore(cont, new_status, RiskSignals(flags=new_status.flags), new_state)

    assert new_status.usage.cost_usd == 0.6
    assert new_status.iteration_costs == [0.1, 0.5]
    assert (new_state.dollars.granted_usd, new_state.dollars.accept_unpriced) == (0.25, True)
    assert new_status.budget_usd == 0.75
    assert new_state.dollars.share_of == "plan p1"


def test_a_fresh_loop_takes_its_budgets_from_the_input() -> None:
    inp = TaskInput(TaskSpec("t1", "T", "/r"), gates=[], limits=LoopLimits(max_cost_usd=2.0))
    state = LoopState.start(inp)
    assert (state.dollars.task_usd, state.dollars.share_usd) == (2.0, None)
    assert LoopState(3, 12, ContextTracker(window=1)).dollars.cap_usd is None


def test_extra_dollars_are_signed_and_an_answer_without_them_signs_as_before() -> None:
    esc = Escalation("t1-1", "t1", "budget_exhausted", "spent", 1, 0, nonce="n")
    plain = Resolution("extend_budget", extra_retries=2)
    assert "extra_usd" not in plain.signed_fields(esc)
    assert Resolution("extend_budget", extra_usd=1.5).signed_fields(esc)["extra_usd"] == 1.5


def test_an_agent_that_stopped_for_money_is_taken_at_its_word() -> None:
    budget = DollarBudget(1.0, accept_unpriced=True)
    spent = _spent(0.5, model="local-llm", unpriced=True)
    assert budget.check(spent) is None
    price = budget.stopped("unknown_price", spent)
    assert price.reason == FallbackReason.UNKNOWN_PRICE
    assert "model local-llm has no price" in price.message
    assert budget.stopped("cost_budget", spent).reason == FallbackReason.BUDGET_EXHAUSTED


def test_dollars_add_up_without_float_noise() -> None:
    totals, costs = UsageTotals(), [0.0]
    for _ in range(3):
        totals.add(TurnUsage(steps=1, cost_usd=0.012, model="m"))
        add_iteration_cost(costs, 1, 0.012)

    assert (totals.cost_usd, totals.by_model["m"].cost_usd, costs) == (0.036, 0.036, [0.036])


def test_a_model_priced_after_a_stop_for_its_price_is_no_longer_listed_unpriced() -> None:
    totals = UsageTotals()
    totals.add(TurnUsage(model="m", unpriced=True))  # stopped before its first call
    assert totals.unpriced_models == ["m"]

    totals.add(TurnUsage(steps=2, input_tokens=10, cost_usd=0.01, model="m"))

    assert totals.unpriced_models == [] and not totals.by_model["m"].unpriced
    restored = UsageTotals.from_memo(totals.to_memo())
    assert restored.unpriced_models == []


def test_a_model_that_spent_unpriced_stays_listed_after_it_gets_a_price() -> None:
    totals = UsageTotals()
    totals.add(TurnUsage(steps=3, input_tokens=30, model="m", unpriced=True))
    totals.add(TurnUsage(steps=2, input_tokens=10, cost_usd=0.01, model="m"))

    assert totals.unpriced_models == ["m"]
    assert UsageTotals.from_memo(totals.to_memo()).unpriced_models == ["m"]
