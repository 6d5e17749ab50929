"""``semspec usage``: steps, tokens and dollars of finished and running tasks, grouped."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table
from semspec.cli.runtime import run_with_client
from semspec.core.errors import InputError

if TYPE_CHECKING:
    from datetime import datetime

    from temporalio.client import Client

    from semspec.client.usage_report import TaskSpending, UsageBy, UsageGroup
    from semspec.services.connect import Endpoints


def _grouping(by: str) -> UsageBy:
    from semspec.client.usage_report import USAGE_GROUPINGS

    for grouping in USAGE_GROUPINGS:
        if by == grouping:
            return grouping
    raise InputError(f"--by {by}: not a grouping", hint=f"use one of: {', '.join(USAGE_GROUPINGS)}")


async def read_spending(client: Client) -> list[TaskSpending]:
    """Every task's spending from its workflow's memo.

    A task that checkpointed ran as several runs (continue-as-new): its latest run carries the
    memo forward, so only that one is read, and the task started when its first run did. A task
    from before the memo spent nothing recorded.
    """
    from temporalio.client import WorkflowExecution, WorkflowExecutionStatus

    from semspec.client.usage_report import TaskSpending
    from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_id_of
    from semspec.workflow.task.usage import PLAN_MEMO, USAGE_MEMO, UsageTotals

    latest: dict[str, WorkflowExecution] = {}
    first_start: dict[str, datetime] = {}
    async for wf in client.list_workflows(f"WorkflowType = '{TASK_WORKFLOW}'"):
        if wf.id not in latest or wf.start_time > latest[wf.id].start_time:
            latest[wf.id] = wf
        first_start[wf.id] = min(wf.start_time, first_start.get(wf.id, wf.start_time))
    spending: list[TaskSpending] = []
    for ident, wf in latest.items():
        plan_id = await wf.memo_value(PLAN_MEMO, None)
        spending.append(
            TaskSpending(
                task_id=task_id_of(ident),
                usage=UsageTotals.from_memo(await wf.memo_value(USAGE_MEMO, None)),
                plan_id=plan_id if isinstance(plan_id, str) and plan_id else None,
                started=first_start[ident],
                running=wf.status == WorkflowExecutionStatus.RUNNING,
            )
        )
    return spending


def _note(group: UsageGroup, one_task: bool) -> str:
    parts = []
    if group.running:
        parts.append("running" if one_task else f"{group.running} running")
    return "; ".join(parts)


def _row(group: UsageGroup, one_task: bool = False) -> tuple[str, ...]:
    from semspec.workflow.task.dollars import spent_text

    return (
        group.key,
        f"{group.tasks:,}",
        f"{group.steps:,}",
        f"{group.input_tokens:,}",
        f"{group.cached_tokens:,}",
        f"{group.output_tokens:,}",
        spent_text(group.cost_usd, group.unpriced_models),
        _note(group, one_task),
    )


def usage_cmd(
    ctx: typer.Context,
    by: str = typer.Option(
        "task", "--by", help="Group by task, plan, day (the task's start, UTC) or model."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    wide: bool = typer.Option(
        False, "--wide", help="One line per group however wide (long cells fold by default)."
    ),
) -> None:
    """Steps, tokens (input includes cached) and dollars of all tasks, grouped, with a total."""
    # Dollars count only models with a price; a group that used one without names it there.
    cli = cli_context(ctx)
    grouping = _grouping(by)

    async def body(client: Client, _e: Endpoints) -> None:
        from semspec.client.usage_report import usage_report

        report = usage_report(await read_spending(client), grouping)
        if as_json:
            print_json(cli.console, report.to_json())
            return
        columns = (grouping, "tasks", "steps", "input", "cached", "output", "dollars", "note")
        rows = [_row(group, one_task=grouping == "task") for group in report.groups]
        rows.append(_row(report.total))
        print_table(cli.console, None, columns, rows, wide=wide)

    run_with_client(cli, body)


def register(root: typer.Typer) -> None:
    """Add the ``usage`` command to the root app."""
    root.command("usage")(usage_cmd)
