"""``semspec worker``: run a Temporal worker for the task loop until SIGTERM/SIGINT."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context

if TYPE_CHECKING:
    from semspec.services.presence import Presence


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the root app."""

    @app.command("worker")
    def worker(
        ctx: typer.Context,
        identity: str | None = typer.Option(
            None,
            "--identity",
            help="Name of this worker in `semspec status` and Temporal (default: pid@host).",
        ),
    ) -> None:
        """Run a worker that executes task workflows and their activities.

        Start as many as you like on one stack; each announces itself under its own identity.
        """
        import asyncio
        import os
        import signal

        from semspec.core import telemetry
        from semspec.core.logging import get_logger
        from semspec.core.nats_connect import connect_nats
        from semspec.core.owner_key import load_owner_key
        from semspec.core.run_folder import run_dir_of
        from semspec.services.connect import Endpoints, nats_options, temporal_client
        from semspec.services.follow import follow_moves
        from semspec.services.presence import announce, withdraw

        # Worktrees, gate logs and the ready file go to the run folder: the owner's only.
        os.umask(0o077)
        log = get_logger("worker")
        cli = cli_context(ctx)
        config, repo = cli.config, cli.repo
        run_dir = run_dir_of(config, repo)
        # Loaded before connecting: a key others can read stops the worker with the fix.
        owner = load_owner_key(config, repo)
        # Before the worker is built: its interceptors and the agents' spans read it.
        traces = telemetry.setup(config, "worker")
        announced: list[Presence] = []

        async def serve(endpoints: Endpoints, stop: asyncio.Event) -> None:
            from semspec.workflow.worker import run_worker

            # Said at once when no NATS node answers, rather than at the first loop event.
            nats = await connect_nats(
                endpoints.nats_url,
                nats_options(config, repo),
                "worker",
                external=endpoints.nats_external,
            )
            await nats.close()
            client = await temporal_client(config, endpoints.temporal_address)
            name = identity or client.identity

            def ready() -> None:
                announced.append(
                    announce(run_dir, "worker", name, endpoints.task_queue, endpoints.addresses())
                )
                log.info("worker ready", task_queue=endpoints.task_queue, identity=name)

            try:
                await run_worker(
                    client,
                    endpoints.task_queue,
                    endpoints.nats_url,
                    nats_options(config, repo),
                    stop,
                    ready,
                    identity=name,
                    owner=owner,
                    nats_replicas=config.services.nats.replicas,
                )
            finally:
                while announced:
                    withdraw(run_dir, announced.pop())

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            # A worker started by hand follows the stack's services when `up` moves them.
            await follow_moves(config, repo, stop, serve, "worker")

        try:
            asyncio.run(main())
        finally:
            for presence in announced:
                withdraw(run_dir, presence)
            traces.shutdown()
