"""Dollars read one way in the CLI and the console (``spent_text``): a priced figure, or
``unpriced`` with the model named, never ``$0.0000`` for an unknown price."""

from __future__ import annotations

from semspec.console.board_rows import board_row
from semspec.workflow.task.dollars import spent_text, step_cost_text
from semspec.workflow.task.listing import listing_of
from semspec.workflow.task.messages import TaskStatus
from semspec.workflow.task.usage import UsageTotals


def test_a_priced_spend_is_its_figure() -> None:
    assert spent_text(0.0123, []) == "$0.0123"
    assert spent_text(0.0, []) == "$0.0000"  # priced at zero (the scripted model) is a price
    assert spent_text(12.5, []) == "$12.50"


def test_an_unknown_price_names_the_model_instead_of_zero_dollars() -> None:
    assert spent_text(0.0, ["qwen2.5-coder-7b"]) == "unpriced (model qwen2.5-coder-7b)"
    assert spent_text(0.0, ["b", "a"]) == "unpriced (models a, b)"


def test_a_partly_priced_spend_shows_both() -> None:
    assert spent_text(0.02, ["local"]) == "$0.0200 + unpriced (model local)"


def test_a_step_cost_names_its_model_or_is_empty_without_a_call() -> None:
    assert step_cost_text(0.001, "gpt-4o") == "$0.0010"
    assert step_cost_text(None, "local") == "unpriced (model local)"
    assert step_cost_text(None, None) == ""


def test_the_board_cost_column_comes_from_the_same_text_as_the_task_page() -> None:
    status = TaskStatus(task_id="t", title="t", phase="done", iteration=1, retries=4, max_retries=3)
    status.usage = UsageTotals(steps=3, cost_usd=0.0, unpriced_models=["local"])
    row = board_row("t", "completed", "", listing_of(status))
    assert row.cost == "unpriced (model local)"
    assert row.retries == "3/3"
    status.usage = UsageTotals(steps=3, cost_usd=0.0)
    assert board_row("t", "completed", "", listing_of(status)).cost == "$0.0000"
