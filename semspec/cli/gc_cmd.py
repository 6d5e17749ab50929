"""``semspec gc``: remove what ended or crashed tasks and lands left behind (docs/landing.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json
from semspec.cli.runtime import run_with_client

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.services.connect import Endpoints


def register(app: typer.Typer) -> None:
    """Add ``gc`` to the top-level commands."""
    app.command("gc")(gc_cmd)


def gc_cmd(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would go; remove nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove worktrees, checkpoint branches and locks of tasks that no longer run.

    Temporal says which tasks run (escalated and halted ones too): nothing of theirs is touched.
    Task branches, which hold approved work, are never removed.
    """
    from semspec.client.gc_client import collect
    from semspec.core.run_folder import run_dir_of

    cli = cli_context(ctx)
    run_dir = run_dir_of(cli.config, cli.repo).resolve()

    async def body(client: Client, _e: Endpoints) -> None:
        found = await collect(client, cli.repo.resolve(), run_dir, dry_run=dry_run)
        if as_json:
            print_json(
                cli.console,
                {
                    "dry_run": dry_run,
                    "removed": [vars(item) for item in found.removed],
                    "kept": [vars(item) | {"why": why} for item, why in found.kept],
                },
            )
            return
        verb = "would remove" if dry_run else "removed"
        for item in found.removed:
            cli.console.print(f"{verb} {item.kind} {item.name} ({item.owner})", markup=False)
        for item, why in found.kept:
            cli.console.print(f"kept {item.kind} {item.name}: {why}", markup=False)
        if not found.removed:
            cli.console.print("nothing to remove", markup=False)

    run_with_client(cli, body)
