"""``semspec worker``: run a Temporal worker for the task loop until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal

import typer

from semspec.cli.context import cli_context
from semspec.logging import get_logger
from semspec.services.agents import mark_ready
from semspec.services.connect import nats_options, resolve_endpoints, run_dir_of, temporal_client

log = get_logger("worker")


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the root app."""

    @app.command("worker")
    def worker(ctx: typer.Context) -> None:
        """Run a worker that executes task workflows and their activities."""
        cli = cli_context(ctx)
        config, repo = cli.config, cli.repo
        endpoints = resolve_endpoints(config, repo)

        async def main() -> None:
            from workflow.task.worker import run_worker

            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            client = await temporal_client(config, endpoints.temporal_address)

            def ready() -> None:
                mark_ready(run_dir_of(config, repo), "worker")
                log.info("worker ready", task_queue=endpoints.task_queue)

            await run_worker(
                client,
                endpoints.task_queue,
                endpoints.nats_url,
                nats_options(config),
                stop,
                ready,
            )

        asyncio.run(main())
