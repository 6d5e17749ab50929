"""``semspec escalations list|show|resolve|watch``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.monitor_cmd import watch as monitor_watch
from semspec.cli.output import print_json, print_table
from semspec.cli.runtime import jsonable, run_with_client
from semspec.vocabulary.resolution_actions import ACTIONS

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.services.connect import Endpoints

app = typer.Typer(help="See and answer escalations.", no_args_is_help=True)
ACTION_NAMES = ", ".join(spec.cli_name for spec in ACTIONS)
"""The ``--action`` choices, from the one table the workflow and the console read."""


@app.command("list")
def list_cmd(
    ctx: typer.Context,
    wide: bool = typer.Option(
        False, "--wide", help="One line per escalation however wide (long cells fold by default)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Escalations waiting for a human (read from Temporal's visibility: no worker asked)."""
    from semspec.client.escalations import waiting_escalations

    cli = cli_context(ctx)

    async def body(client: Client, _e: Endpoints) -> None:
        rows = await waiting_escalations(client)
        if as_json:
            print_json(cli.console, jsonable(rows))
            return
        if not rows:
            cli.console.print("no escalation is waiting for a human")
            return
        print_table(
            cli.console,
            None,
            ["escalation", "task", "reason", "iteration", "message"],
            [
                (e["escalation_id"], e["task_id"], e["reason"], e["iteration"], e["message"])
                for e in rows
            ],
            wide=wide,
        )

    run_with_client(cli, body)


@app.command("show")
def show_cmd(
    ctx: typer.Context,
    ident: str = typer.Argument(..., help="Escalation id (from `escalations list`) or task id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One escalation with its evidence (the failed gates' output) and ready-to-run commands."""
    from semspec.client.task_client import check_pending, find_task, task_status
    from semspec.client.task_render import render_failed_gates
    from semspec.vocabulary.suggestions import suggested_actions

    cli = cli_context(ctx)

    async def body(client: Client, _e: Endpoints) -> None:
        task_id, escalation_id = await find_task(client, ident)
        status = await task_status(client, task_id)
        check_pending(status, escalation_id)
        esc = status.pending_escalation
        assert esc is not None
        actions = suggested_actions(task_id, esc.reason)
        if as_json:
            print_json(
                cli.console,
                {
                    "escalation": jsonable(esc),
                    "actions": jsonable(actions),
                    "failed_gates": jsonable([g for g in status.last_gates if not g.passed]),
                },
            )
            return
        out = cli.console.print
        out(f"escalation {esc.escalation_id} of task {task_id}: {esc.reason}", markup=False)
        out(f"  {esc.message}", markup=False)
        out(
            f"  iteration {esc.iteration}, retries {esc.retries}, source {esc.source}", markup=False
        )
        if esc.fingerprint:
            out(f"  fingerprint {esc.fingerprint}", markup=False)
        render_failed_gates(cli.console, status.last_gates)
        for action in actions:
            out(f"  {action.description}: {action.command}", markup=False)

    run_with_client(cli, body)


@app.command("resolve")
def resolve_cmd(
    ctx: typer.Context,
    ident: str = typer.Argument(..., help="Escalation id (from `escalations list`) or task id."),
    action: str = typer.Option(..., "--action", help=f"One of {ACTION_NAMES}."),
    guidance: str | None = typer.Option(None, "--guidance", help="What the developer should do."),
    extra_retries: int = typer.Option(
        0,
        "--extra-retries",
        min=0,
        help="For extend-budget: how much to raise the retry bound (every answer also starts "
        "the retry count again); 0 (the default) raises it by loop.max_retries.",
    ),
    extra_usd: float = typer.Option(
        0.0,
        "--extra-usd",
        min=0,
        help="For extend-budget: US dollars to add to the task's dollar budget; 0 (the default) "
        "adds the task's budget again when its dollars are spent.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Answer an escalation; the task resumes (or ends, for approve/abort).

    For a land that did not land (land_conflict, land_gate_failed, land_refused), retry has the
    developer redo the change on the base as it is now, and approve lands the task branch
    again as it is (docs/landing.md).
    """
    from semspec.client.escalations import answer as checked_answer
    from semspec.client.task_client import find_task, resolve
    from semspec.core.owner_key import load_owner_key

    cli = cli_context(ctx)
    answer = checked_answer(action, guidance, extra_retries, extra_usd)
    # Only the stack's owner may answer: the workflow checks this key's signature.
    owner = load_owner_key(cli.config, cli.repo)

    async def body(client: Client, _e: Endpoints) -> None:
        task_id, escalation_id = await find_task(client, ident)
        ack = await resolve(client, task_id, answer, owner, escalation_id)
        if as_json:
            print_json(cli.console, jsonable(ack))
        else:
            cli.console.print(
                f"resolved {ack.escalation_id} of task {task_id} with {ack.action}", markup=False
            )

    run_with_client(cli, body)


# The same command as `semspec monitor watch`, under the name people on call look for.
app.command("watch")(monitor_watch)
