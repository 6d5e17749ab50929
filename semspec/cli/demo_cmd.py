"""``semspec demo``: the whole product in one run, on a sample repository and the embedded
stack: SOPs, a risk-monitor flag, an escalation and its answer, a checkpoint."""

from __future__ import annotations

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json
from semspec.cli.runtime import jsonable
from semspec.cli.terminal_text import TerminalConsole
from semspec.core.errors import InputError


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the root app."""

    @app.command("demo")
    def demo(
        ctx: typer.Context,
        yes: bool = typer.Option(
            False, "--yes", help="Answer the escalation yourself (retry with guidance)."
        ),
        keep: bool = typer.Option(
            False,
            "--keep",
            help="Keep the sample repository (always kept without --yes, or if a step failed).",
        ),
        timeout: float = typer.Option(
            300.0, "--timeout", help="Seconds to wait for each task to finish or escalate."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print a JSON summary at the end."),
    ) -> None:
        """Show the whole loop on a throwaway repository with scripted agents.

        SOPs synced and cited by the reviewer, a scope-creep flag from the risk monitor, a
        checkpoint under context pressure, a no_new_evidence escalation and a human's answer.
        Exits 1 when a step did not show."""
        from semspec.demo.run import DemoOptions, run_demo

        if timeout <= 0:
            raise InputError(
                f"--timeout must be a positive number of seconds, got {timeout:g}",
                hint="e.g. --timeout 300",
            )
        cli = cli_context(ctx)
        # With --json, stdout carries only the summary; the narration goes to stderr. Lines are
        # never wrapped, so printed paths and commands can be copied as they are.
        narration = TerminalConsole(stderr=as_json, soft_wrap=True)
        summary = run_demo(cli.config, cli.repo, DemoOptions(yes, keep, timeout), narration)
        if as_json:
            print_json(cli.console, jsonable(summary))
        if not summary.ok:
            narration.print("the demo did not go as scripted; see the lines above", markup=False)
            raise typer.Exit(1)
