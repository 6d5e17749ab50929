"""``semspec plan status`` words the plan's dollars as every other surface does (issue 30 item
2): a model without a price is named, never shown as ``$0.0000``."""

from __future__ import annotations

from rich.console import Console

from semspec.cli.plan_cmd import show
from semspec.workflow.plan.messages import PlanStatus
from semspec.workflow.task.usage import UsageTotals


def headline(status: PlanStatus) -> str:
    console = Console(width=200, record=True, color_system=None)
    show(console, status, as_json=False)
    return next(line for line in console.export_text().splitlines() if line.startswith("cost:"))


def test_a_plan_of_unpriced_models_names_them_instead_of_zero_dollars() -> None:
    usage = UsageTotals(unpriced_models=["openai:local-model"])
    status = PlanStatus("p1", "plan", state="done", usage=usage)
    assert headline(status) == "cost: unpriced (model openai:local-model)"


def test_a_priced_plan_shows_its_figure_of_its_budget() -> None:
    status = PlanStatus("p1", "plan", usage=UsageTotals(cost_usd=1.5), max_cost_usd=2.0)
    assert headline(status) == "cost: $1.50 of $2.00"
