"""``semspec task submit|status|list|logs|cancel``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table
from semspec.cli.runtime import jsonable, run_with_client
from semspec.client.task_states import LIST_LIMIT, TASK_OUTCOMES, TASK_STATES, check_state
from semspec.core.errors import InputError, TaskSpecError
from semspec.vocabulary.workflow_names import task_workflow_id

if TYPE_CHECKING:
    from rich.console import Console
    from temporalio.client import Client

    from semspec.services.connect import Endpoints
    from semspec.workflow.task.messages import TaskStatus

app = typer.Typer(help="Submit and follow tasks.", no_args_is_help=True)

EXIT_ESCALATED = 3
EXIT_INTERRUPTED = 130
"""Ctrl-C, as a shell reports SIGINT (128 + 2)."""


@app.command("submit")
def submit_cmd(
    ctx: typer.Context,
    title: str | None = typer.Argument(None, help="Short title of the task."),
    task_file: Path | None = typer.Option(None, "-f", "--task-file", help="Task YAML file."),
    files: list[str] = typer.Option(
        [],
        "--file",
        help=(
            "Task file, relative to the repository root (repeatable); a path that does not "
            "exist yet is a file the task will create. Changes to test files (config "
            "scope.allow) are not scope creep."
        ),
    ),
    criteria: list[str] = typer.Option(
        [], "--criterion", help="Acceptance criterion (repeatable)."
    ),
    description: str = typer.Option("", "--description", help="Longer description."),
    task_id: str | None = typer.Option(None, "--id", help="Task id (default: from the title)."),
    plan_id: str | None = typer.Option(None, "--plan", help="Plan this task belongs to."),
    script: str | None = typer.Option(
        None,
        "--script",
        help="YAML script the scripted developer and reviewer replay (format: "
        "docs/scripted-agent.md).",
    ),
    wait: bool = typer.Option(False, "--wait", help="Follow progress until done or escalated."),
    keep_checkpoints: bool = typer.Option(
        False, "--keep-checkpoints", help="Keep checkpoint branches after the task ends."
    ),
    land: str | None = typer.Option(
        None,
        "--land",
        metavar="auto|manual",
        help="auto: land the task on the base branch once approved; manual: wait for `semspec "
        "task land` (default: the task file's land, else loop.land).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Submit a task: TITLE with --file/--criterion, or -f task.yaml.

    With --wait the exit code is 0 when approved, 3 when escalated, 1 otherwise.
    """
    from semspec.client.task_client import submit
    from semspec.client.task_spec import TaskDraft, build_task_input, draft_from_yaml
    from semspec.core import telemetry
    from semspec.core.owner_key import load_owner_key

    cli = cli_context(ctx)
    if task_file is not None:
        draft = draft_from_yaml(task_file)
        draft.files = draft.files or files
        draft.criteria = draft.criteria or criteria
        draft.script = draft.script or script
        draft.task_id = task_id or draft.task_id
    elif title is None:
        raise TaskSpecError("give a TITLE or -f task.yaml", field="title")
    else:
        draft = TaskDraft(
            title=title,
            files=files,
            criteria=criteria,
            description=description,
            task_id=task_id,
            plan_id=plan_id,
            script=script,
        )
    if land is not None:
        from semspec.client.task_spec import land_mode

        draft.land = land_mode(land, "--land")
    inp = build_task_input(draft, cli.config, cli.repo)
    if keep_checkpoints:
        inp = replace(inp, spec=replace(inp.spec, keep_checkpoints=True))
    owner = load_owner_key(cli.config, cli.repo)

    submitted: list[str] = []  # the task id once the stack took it: Ctrl-C then leaves it running

    async def body(client: Client, endpoints: Endpoints) -> int:
        await submit(client, endpoints.task_queue, inp, owner)
        task = inp.spec.task_id
        submitted.append(task)
        if as_json and not wait:
            print_json(cli.console, {"task_id": task, "workflow_id": task_workflow_id(task)})
            return 0
        if not as_json:
            cli.console.print(f"submitted task {task}", markup=False)
            if endpoints.ui_url:
                where = f"{endpoints.ui_url}/namespaces/{endpoints.namespace}/workflows"
                cli.console.print(f"  {where}/{task_workflow_id(task)}", markup=False)
        if not wait:
            return 0
        return await follow(cli.console if not as_json else None, client, task, as_json, cli)

    # The submission starts the task's trace (docs/telemetry.md); its spans are sent on exit.
    traces = telemetry.setup(cli.config, "cli")
    try:
        raise typer.Exit(run_with_client(cli, body))
    except KeyboardInterrupt:
        # Ctrl-C stops the following, not the task: the workflow runs on in the worker.
        tell_interrupted(cli.err, inp.spec.task_id, sure=bool(submitted))
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        traces.shutdown()


def tell_interrupted(err: Console, task_id: str, *, sure: bool) -> None:
    """On stderr (stdout may be JSON for a script): the task goes on, and the commands to
    follow or cancel it."""
    said = "goes on running" if sure else "may have been submitted and then goes on running"
    err.print(f"interrupted: task {task_id} {said} on the worker", markup=False, soft_wrap=True)
    for what, command in (
        ("follow it", f"semspec task status {task_id}"),
        ("its history", f"semspec task logs {task_id}"),
        ("cancel it", f"semspec task cancel {task_id}"),
    ):
        err.print(f"  {what}: {command}", markup=False, soft_wrap=True)


async def follow(console, client: Client, task_id: str, as_json: bool, cli) -> int:  # type: ignore[no-untyped-def]
    """Print log entries as they appear until the task ends or escalates; the exit code.

    The outcome is said once, by the final line: the log's own ``finished`` entry is skipped.
    A slow or failed status query is noted on stderr and asked again (``task_follow``).
    """
    from semspec.client.task_client import task_status
    from semspec.client.task_follow import wait_for_end
    from semspec.client.task_render import render_entry, render_final

    shown = 0

    def show_new(status: TaskStatus) -> None:
        nonlocal shown
        if console is not None:
            for entry in status.log[shown:]:
                if entry.kind != "finished":
                    render_entry(console, entry)
        shown = len(status.log)

    def note(line: str) -> None:
        cli.err.print(line, markup=False, soft_wrap=True)

    status = await wait_for_end(lambda: task_status(client, task_id), show_new, note)
    if as_json:
        print_json(cli.console, jsonable(status))
    elif console is not None:
        render_final(console, status)
    if status.pending_escalation is not None:
        return EXIT_ESCALATED
    return 0 if status.outcome == "approved" else 1


def _show_status(
    ctx: typer.Context, task_id: str, as_json: bool, render: Callable[[Console, TaskStatus], None]
) -> None:
    """Fetch a task's status and print it with ``render`` (or as JSON, the log only for logs)."""
    from semspec.client.land_client import land_state, unlanded_blockers
    from semspec.client.task_client import task_status
    from semspec.client.task_render import render_log, render_log_raw

    cli = cli_context(ctx)

    async def body(client: Client, _e: Endpoints) -> None:
        status = await task_status(client, task_id)
        logs = render in (render_log, render_log_raw)
        # Where approved work is on its way to the base branch (docs/landing.md).
        # A task that lands itself says where its land is; else ask the land's workflow.
        land = None if logs else status.land or await land_state(client, task_id, status.outcome)
        unlanded = [] if logs else await unlanded_blockers(client, status)
        if as_json:
            fields = {"land": land, "waiting_for_land": unlanded}
            print_json(cli.console, jsonable(status.log) if logs else jsonable(status) | fields)
        else:
            render(cli.console, status)
            if land is not None:
                cli.console.print(f"  land: {land_text(task_id, land)}", markup=False)
            for blocker in unlanded:
                # Approved but not landed: nothing moves until someone lands it.
                cli.console.print(
                    f"  next: semspec task land {blocker} ({blocker} is approved and waits to be "
                    "landed; this task starts once it is on the base)",
                    markup=False,
                )

    run_with_client(cli, body)


def land_text(task_id: str, land: dict[str, str]) -> str:
    """The ``land:`` line of ``task status`` from ``land_client.land_state``'s dict."""
    from semspec.client.land_text import status_line

    return status_line(task_id, land)


@app.command("status")
def status_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    raw: bool = typer.Option(False, "--raw", help="Add the failed gates' raw output."),
) -> None:
    """Phase, iteration, retries, dollars, last gates and verdict, escalation, fingerprints.

    Dollars are shown per iteration and against the task's budget; a pending escalation comes
    with the commands that answer it. A failed gate shows its findings (file, line, rule,
    message); ``--raw`` adds the end of its output."""
    from semspec.client.task_render import render_status, render_status_raw

    _show_status(ctx, task_id, as_json, render_status_raw if raw else render_status)


@app.command("logs")
def logs_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    raw: bool = typer.Option(False, "--raw", help="Add the failed gates' raw output."),
) -> None:
    """Iteration by iteration: developer outcome, gates, verdicts, signals, fingerprints."""
    from semspec.client.task_render import render_log, render_log_raw

    _show_status(ctx, task_id, as_json, render_log_raw if raw else render_log)


@app.command("list")
def list_cmd(
    ctx: typer.Context,
    state: str | None = typer.Option(
        None,
        "--state",
        help=f"Only tasks in this state ({', '.join(TASK_STATES)}) or with this outcome "
        f"({', '.join(TASK_OUTCOMES)}).",
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help=f"Show the newest LIMIT tasks (default {LIST_LIMIT})."
    ),
    show_all: bool = typer.Option(False, "--all", help="Show every task (not with --limit)."),
    wide: bool = typer.Option(
        False, "--wide", help="One line per task however wide (long cells fold by default)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Tasks, newest first: one row per task; failed and refused ones show as failed.

    Read from Temporal's visibility in one call per page: no worker needs to be running."""
    cli = cli_context(ctx)
    wanted = check_state(state)
    if show_all and limit is not None:
        raise InputError(
            "--limit and --all ask for different numbers of tasks",
            hint="give one: --all for every task, or --limit N for the newest N",
        )

    async def body(client: Client, _e: Endpoints) -> None:
        from semspec.client.task_client import list_tasks

        page = await list_tasks(client, wanted, None if show_all else (limit or LIST_LIMIT))
        rows = page.rows
        if page.more:
            # On stderr: stdout stays the table or the JSON list a script reads.
            tasks = "task" if len(rows) == 1 else "tasks"
            cli.err.print(
                f"the newest {len(rows)} {tasks}; see more with --limit N or --all", markup=False
            )
        if as_json:
            print_json(cli.console, jsonable(rows))
            return
        if not rows:
            # As `escalations list` does: a sentence, not a header over nothing.
            empty = f"no task matches --state {state}" if state else "no task yet"
            cli.console.print(empty, markup=False)
            return
        from semspec.client.land_text import list_cell

        # land: where approved work is on its way to the base, or the tasks it waits on.
        print_table(
            cli.console,
            None,
            ["task", "state", "phase", "iteration", "title", "started", "land"],
            [
                (
                    r.task_id,
                    r.state,
                    r.phase,
                    r.iteration,
                    r.title,
                    r.started,
                    list_cell(r.land, r.waiting_on),
                )
                for r in rows
            ],
            wide=wide,
        )

    run_with_client(cli, body)


@app.command("cancel")
def cancel_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Cancel a running task; its branch stays, its worktree goes (unless loop.keep_worktrees)."""
    from semspec.client.task_client import cancel

    cli = cli_context(ctx)

    async def body(client: Client, _e: Endpoints) -> None:
        await cancel(client, task_id)
        if as_json:
            print_json(cli.console, {"task_id": task_id, "cancel_requested": True})
        else:
            cli.console.print(f"cancellation requested for task {task_id}", markup=False)

    run_with_client(cli, body)


@app.command("checkpoints")
def checkpoints_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Task id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Checkpoint branches of a task (kept after the end only with --keep-checkpoints)."""
    from semspec.workflow.context.checkpoint import task_checkpoints

    cli = cli_context(ctx)
    branches = task_checkpoints(cli.repo, task_id)
    if as_json:
        print_json(cli.console, branches)
    elif not branches:
        cli.console.print(f"task {task_id} has no checkpoint branches", markup=False)
    else:
        for branch in branches:
            cli.console.print(branch, markup=False)
