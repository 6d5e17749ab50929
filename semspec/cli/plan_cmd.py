"""``semspec plan submit|status``: run a plan of dependent tasks and follow it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli.context import CliContext, cli_context
from semspec.cli.output import print_json, print_table
from semspec.cli.runtime import jsonable, run_with_client

if TYPE_CHECKING:
    from rich.console import Console
    from temporalio.client import Client

    from semspec.services.connect import Endpoints
    from semspec.workflow.plan.messages import PlanStatus

app = typer.Typer(help="Submit and follow plans of dependent tasks.", no_args_is_help=True)

EXIT_ESCALATED = 3
POLL_S = 0.5


@app.command("submit")
def submit_cmd(
    ctx: typer.Context,
    plan_file: Path = typer.Argument(..., help="Plan YAML file (id, title, tasks)."),
    wait: bool = typer.Option(
        False, "--wait", help="Follow the plan until it is done or a task escalates."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Validate PLAN_FILE and start its tasks, in parallel where depends_on allows."""
    from semspec.client.plan_client import submit_plan
    from semspec.client.plan_spec import load_plan
    from semspec.core.owner_key import load_owner_key
    from semspec.vocabulary.workflow_names import plan_workflow_id

    cli = cli_context(ctx)
    inp = load_plan(plan_file, cli.config, cli.repo)
    owner = load_owner_key(cli.config, cli.repo)

    async def body(client: Client, endpoints: Endpoints) -> int:
        await submit_plan(client, endpoints.task_queue, inp, owner)
        task_ids = [t.input.spec.task_id for t in inp.tasks]
        if not wait:
            if as_json:
                ident = {"workflow_id": plan_workflow_id(inp.plan_id), "tasks": task_ids}
                print_json(cli.console, {"plan_id": inp.plan_id, **ident})
            else:
                cli.console.print(
                    f"submitted plan {inp.plan_id}: {', '.join(task_ids)}", markup=False
                )
            return 0
        if not as_json:
            cli.console.print(f"submitted plan {inp.plan_id}", markup=False)
        return await follow(client, inp.plan_id, cli, as_json)

    raise typer.Exit(run_with_client(cli, body))


async def follow(client: Client, plan_id: str, cli: CliContext, as_json: bool) -> int:
    """Print plan steps as they happen until it is done or a task escalates; the exit code."""
    import asyncio

    from semspec.client.plan_client import escalated_tasks, plan_status
    from semspec.workflow.plan.messages import APPROVED

    shown = 0
    while True:
        status = await plan_status(client, plan_id)
        if not as_json:
            for entry in status.log[shown:]:
                note = f": {entry.message}" if entry.message else ""
                cli.console.print(
                    f"  {entry.task_id} {entry.kind} ({entry.state}){note}", markup=False
                )
        shown = len(status.log)
        escalated = escalated_tasks(status)
        if status.state != "running" or escalated:
            show(cli.console, status, as_json)
            if escalated:
                return EXIT_ESCALATED
            return 0 if status.outcome == APPROVED else 1
        await asyncio.sleep(POLL_S)


@app.command("status")
def status_cmd(
    ctx: typer.Context,
    plan_id: str = typer.Argument(..., help="Plan id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every task of the plan: state, phase, dependencies, dollars, and reason or commit.

    The plan's dollars are shown against its budget (``max_cost_usd``)."""
    from semspec.client.plan_client import plan_status

    cli = cli_context(ctx)

    async def body(client: Client, _e: Endpoints) -> None:
        show(cli.console, await plan_status(client, plan_id), as_json)

    run_with_client(cli, body)


def show(console: Console, status: PlanStatus, as_json: bool) -> None:
    """Print a plan's status as JSON or as a headline plus one row per task."""
    if as_json:
        print_json(console, jsonable(status))
        return
    outcome = f" ({status.outcome})" if status.outcome else ""
    console.print(f"plan {status.plan_id}: {status.title} — {status.state}{outcome}", markup=False)
    from semspec.workflow.plan.messages import RUNNING
    from semspec.workflow.task.dollars import spent_text, usd

    spent = status.usage.cost_usd + sum(
        row.cost_usd for row in status.tasks if row.state == RUNNING
    )
    budget = f" of {usd(status.max_cost_usd)}" if status.max_cost_usd is not None else ""
    # One way to show money (spent_text): the models that ran without a price are named.
    console.print(f"cost: {spent_text(spent, status.usage.unpriced_models)}{budget}", markup=False)
    rows = [
        (
            row.task_id,
            row.state,
            row.phase or "",
            ", ".join(row.depends_on),
            f"${row.cost_usd:.4f}",
            row.reason or (row.commit_id or "")[:10],
        )
        for row in status.tasks
    ]
    headers = ["task", "state", "phase", "depends on", "cost", "reason / commit"]
    print_table(console, None, headers, rows)
