"""``semspec ui``: serve the web console of the repository's running stack."""

from __future__ import annotations

import typer

from semspec.cli.context import cli_context


def register(app: typer.Typer) -> None:
    """Add ``ui`` to the root app."""

    @app.command("ui")
    def ui(
        ctx: typer.Context,
        port: int | None = typer.Option(
            None,
            "--port",
            min=0,
            max=65535,
            help="Loopback port (default: console.port; 0 = any free port).",
        ),
        as_json: bool = typer.Option(
            False, "--json", help="Print the URL as one JSON object, then serve."
        ),
    ) -> None:
        """Serve the web console (board, tasks, inbox, monitor, knowledge) until Ctrl-C.

        It listens on 127.0.0.1 only; open the URL it prints (it carries the stack's secret).
        `semspec up` starts one as a service unless `console.enabled` is false.
        """
        import json
        import os

        from semspec.console.serve import serve_console
        from semspec.services.connect import nats_url_of, resolve_endpoints

        os.umask(0o077)  # the secret it may create goes to the run folder: the owner's only
        cli = cli_context(ctx)
        config, repo = cli.config, cli.repo
        # Say at once when there is no stack, rather than on every page.
        resolve_endpoints(config, repo)
        nats_url_of(config, repo)

        def announce(url: str, bound: int) -> None:
            if as_json:
                line = json.dumps({"url": url, "port": bound, "pid": os.getpid()})
                cli.console.file.write(line + "\n")
            else:
                cli.console.print(f"semspec console: {url}", markup=False, soft_wrap=True)
                cli.err.print("Ctrl-C stops it", markup=False)
            cli.console.file.flush()

        serve_console(config, repo, config.console.port if port is None else port, announce)
