"""``semspec up|down|status``: the embedded service stack."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table

if TYPE_CHECKING:
    from semspec.core.config.models import SandboxMode
    from semspec.services.supervisor import ServiceStatus


def _show(ctx: typer.Context, statuses: list[ServiceStatus], as_json: bool) -> None:
    cli = cli_context(ctx)
    if as_json:
        print_json(cli.console, [asdict(s) for s in statuses])
        return
    rows = [(s.name, s.state, s.address, s.version, s.pid or "", s.identity) for s in statuses]
    columns = ["service", "state", "address", "version", "pid", "identity"]
    print_table(cli.console, None, columns, rows)
    for status in statuses:
        if status.extra and status.extra.get("ui_url"):
            cli.console.print(f"Temporal Web UI: {status.extra['ui_url']}", markup=False)
    for status in statuses:
        if status.state == "stale" and status.extra:
            who = f"{status.name} {status.identity or status.pid}"
            fix = (
                "restart it"
                if status.extra.get("started") == "separately"
                else "run `semspec up` to restart it"
            )
            cli.console.print(f"{who} uses {status.extra['stale']}: {fix}", markup=False)
    separate = [s for s in statuses if s.extra and s.extra.get("started") == "separately"]
    if separate:
        names = ", ".join(f"{s.name} {s.identity}" for s in separate)
        cli.console.print(
            f"started outside `semspec up` (`semspec down` leaves them running): {names}",
            markup=False,
        )


def _sandbox(mode: SandboxMode) -> tuple[dict[str, str], str]:
    """The fence gates and command agents get (``gates.sandbox``): the worker's ``extra``
    fields and a line for the table."""
    from semspec.core.sandbox import sandbox_for

    sandbox = sandbox_for(mode)
    if sandbox.bwrap is not None:
        line = f"gates and command agents run under bubblewrap ({sandbox.bwrap})"
        return {"sandbox": "bwrap"}, line
    effect = "gates will fail until it works" if mode == "bwrap" else "they run unfenced"
    return (
        {"sandbox": "none", "sandbox_reason": sandbox.reason},
        f"gates and command agents have no sandbox: {sandbox.reason}; {effect}",
    )


def _show_fenced(ctx: typer.Context, statuses: list[ServiceStatus], as_json: bool) -> None:
    """The services, with the sandbox gates get on the worker's row and in one line after."""
    cli = cli_context(ctx)
    sandbox, note = _sandbox(cli.config.gates.sandbox)
    shown = [
        replace(s, extra={**(s.extra or {}), **sandbox}) if s.name == "worker" else s
        for s in statuses
    ]
    _show(ctx, shown, as_json)
    if not as_json:
        cli.console.print(note, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``up``, ``down`` and ``status`` to the root app."""

    @app.command("up")
    def up(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Start the embedded services (or check the external ones) and wait until healthy."""
        from semspec.services.supervisor import Supervisor

        cli = cli_context(ctx)
        progress = None if as_json else (lambda msg: cli.err.print(msg, markup=False))
        statuses = Supervisor(cli.config, cli.repo, on_progress=progress).up()
        _show_fenced(ctx, statuses, as_json)

    @app.command("down")
    def down(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Stop what `semspec up` started (by recorded PID); data under .semspec/run stays.

        Works from the run folder alone: with a config that cannot be read, it stops what the
        run folder `semspec up` last used (else the default one) records.
        """
        from semspec.core.errors import ConfigError
        from semspec.core.run_folder import run_dir_of
        from semspec.services.run_location import last_run_dir
        from semspec.services.supervisor import stop_recorded

        cli = cli_context(ctx)
        try:
            run_dir = run_dir_of(cli.config, cli.repo)
        except ConfigError as exc:
            run_dir, found = last_run_dir(cli.repo)
            cli.err.print(
                f"the config cannot be read ({exc}); stopping what {run_dir} records ({found})",
                markup=False,
                soft_wrap=True,
            )
        statuses = stop_recorded(run_dir)
        if not statuses and not as_json:
            cli.console.print("nothing was running")
            return
        _show(ctx, statuses, as_json)

    @app.command("status")
    def status(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Show each service: up/down, address, version; exit 1 if any is down."""
        from semspec.services.supervisor import Supervisor

        cli = cli_context(ctx)
        statuses = Supervisor(cli.config, cli.repo).status()
        _show_fenced(ctx, statuses, as_json)
        if any(s.state not in ("up", "external") for s in statuses):
            raise typer.Exit(1)
