"""``semspec monitor``: run the risk monitor, show what it holds, watch its signals."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli.context import CliContext, cli_context
from semspec.cli.output import print_json, print_table
from semspec.core.errors import InputError, NotFoundError, ServiceError
from semspec.core.path_refusal import os_refusal

if TYPE_CHECKING:
    from semspec.core.config.models import SemspecConfig
    from semspec.processors.risk_monitor.replay.backtest import RunReport
    from semspec.processors.risk_monitor.state import TaskState

app = typer.Typer(
    help="The risk monitor: run it, see the state it holds, watch the signals it raises.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@app.callback(invoke_without_command=True)
def monitor(
    ctx: typer.Context,
    repo: Path | None = typer.Option(
        None, "--repo", help="Target repository (default: the one given to `semspec`)."
    ),
) -> None:
    """Run the risk monitor until SIGTERM/SIGINT (when no subcommand is given)."""
    if repo is not None:
        refusal = os_refusal(repo)
        if refusal is not None:
            raise InputError(f"--repo {repo}: {refusal}", hint="pass an existing repository path")
        ctx.find_root().obj = CliContext(repo.resolve())
    if ctx.invoked_subcommand is None:
        import asyncio
        import os

        from semspec.services.monitor_runner import serve

        cli = cli_context(ctx)
        # Its ready file goes to the run folder: the owner's only.
        os.umask(0o077)
        asyncio.run(serve(cli.config, cli.repo))


@app.command("state")
def state(
    ctx: typer.Context,
    task: str | None = typer.Argument(None, help="Only this task."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print what the monitor holds per task: levels reached, episode, counts, files."""
    import asyncio

    cli = cli_context(ctx)
    states = asyncio.run(_load_states(cli.config, cli.repo, task))
    if as_json:
        print_json(cli.console, [asdict(s) for s in states])
        return
    rows = [
        (
            s.task_id,
            "active" if s.active else "finished",
            s.episode,
            ", ".join(f"{rule}={level}" for rule, level in sorted(s.levels.items())) or "-",
            s.retries,
            f"{s.utilization:.0%}",
            s.events,
            len(s.touched),
            len(s.outbox),
        )
        for s in states
    ]
    columns = ["task", "state", "episode", "levels", "retries", "context", "events", "files"]
    print_table(cli.console, None, [*columns, "unsent"], rows)


@app.command("watch")
def watch(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per signal."),
    count: int | None = typer.Option(None, "--count", min=1, help="Stop after this many."),
) -> None:
    """Print user signals as they arrive, with the commands to run next (Ctrl-C stops)."""
    from semspec.cli.escalations_watch import watch_signals
    from semspec.services.connect import nats_options, resolve_endpoints

    cli = cli_context(ctx)
    endpoints = resolve_endpoints(cli.config, cli.repo)
    options = nats_options(cli.config, cli.repo)
    watch_signals(endpoints.nats_url, options, cli.console, as_json, count=count)


@app.command("events")
def events(
    ctx: typer.Context,
    task: str | None = typer.Argument(None, help="Only this task's events."),
    kind: str | None = typer.Option(
        None, "--kind", help="Only events of this kind (step, iteration, gate, review, ...)."
    ),
    limit: int = typer.Option(100_000, "--limit", min=1, help="Print at most this many."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON array of the events instead of JSON lines."
    ),
) -> None:
    """Print stored loop events as JSON lines, oldest first (save steps to replay them).

    Example: `semspec monitor events T --kind step > t.steps.jsonl`, then
    `semspec monitor replay t.steps.jsonl`.
    """
    import asyncio
    import json
    import sys

    from semspec.cli.monitor_events import check_kind, print_stored_events

    cli = cli_context(ctx)
    try:
        wanted = check_kind(kind)
    except ValueError as exc:
        raise InputError(str(exc), hint="see docs/events.md for the kinds") from None

    collected: list[object] = []

    def emit(line: str) -> None:
        if as_json:
            collected.append(json.loads(line))
        else:
            sys.stdout.write(line + "\n")

    read = asyncio.run(
        print_stored_events(cli.config, cli.repo, emit, task=task, kind=wanted, limit=limit)
    )
    if as_json:
        print_json(cli.console, collected)
    sys.stdout.flush()
    if read.printed == 0:
        which = f" of task {task}" if task else ""
        typer.echo(f"no stored events{which}", err=True)
    if read.skipped:
        typer.echo(f"{read.skipped} stored messages were not valid events: skipped", err=True)


@app.command("replay")
def replay(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(
        ...,
        help="Recorded runs: semspec step events (JSONL), chat logs (mini-swe-agent too), "
        "SWE-agent .traj, OpenHands event lists, ATIF trajectories; gzip-compressed too.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Backtest the risk rules on recorded runs (no NATS or Temporal needed).

    Per run: the format it was read as, where each rule would have fired, at which level, and
    the tokens and dollars that stopping at the first pause or halt would have saved."""
    from semspec.processors.risk_monitor.replay.command import registry_pricer, replay_files

    cli = cli_context(ctx)
    reports, errors = replay_files(files, cli.config.risk, registry_pricer(cli.repo))
    if as_json:
        runs = [r.to_json() for r in reports]
        print_json(cli.console, {"runs": runs, "errors": [e.message for e in errors]})
    else:
        if reports:
            print_table(cli.console, None, REPLAY_COLUMNS, [replay_row(r) for r in reports])
        for exc in errors:
            cli.err.print(f"error: {exc.message}", markup=False, highlight=False)
    if errors:
        cli.err.print(f"hint: {errors[0].hint}", markup=False, highlight=False)
        raise typer.Exit(2)


REPLAY_COLUMNS = ["run", "format", "steps", "tokens", "fired", "stop", "tokens saved", "$ saved"]


def replay_row(report: RunReport) -> tuple[object, ...]:
    """One table row of ``monitor replay``: where rules fired, and what stopping saved."""
    fired = ", ".join(f"{f.rule} {f.level}@{f.step}" for f in report.firings) or "-"
    share = report.tokens_saved / report.tokens if report.tokens else 0.0
    saved = f"{report.tokens_saved} ({share:.0%})" if report.stopped_at else "-"
    usd = "?" if report.usd_saved is None else f"{report.usd_saved:.4f}"
    stop = f"step {report.stopped_at}" if report.stopped_at else "-"
    return (report.name, report.format, report.steps, report.tokens, fired, stop, saved, usd)


async def _load_states(config: SemspecConfig, repo: Path, task: str | None) -> list[TaskState]:
    from nats.js.errors import BucketNotFoundError

    from semspec.processors.risk_monitor.store import StateStore
    from semspec.services.connect import resolve_endpoints, stack_nats
    from semspec.vocabulary.streams import STATE_BUCKET

    nc = await stack_nats(config, repo)
    try:
        try:
            kv = await nc.jetstream().key_value(STATE_BUCKET)
        except BucketNotFoundError as exc:
            raise ServiceError(
                f"bucket {STATE_BUCKET} does not exist yet",
                service="nats",
                address=resolve_endpoints(config, repo).nats_url,
                hint="the monitor has not run; start it with `semspec up` or `semspec monitor`",
            ) from exc
        store = StateStore(kv)
        if task is None:
            return await store.task_states()
        found = await store.load_task(task)
        if found is None:
            raise NotFoundError(
                "task", task, hint="list what the monitor holds: semspec monitor state"
            )
        return [found]
    finally:
        await nc.close()
