"""``semspec config show|validate``."""

from __future__ import annotations

import typer
import yaml

from semspec.cli.context import cli_context
from semspec.cli.output import print_json
from semspec.config import check_config, config_path

app = typer.Typer(help="Show or validate .semspec/config.yaml.", no_args_is_help=True)


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of YAML."),
) -> None:
    """Print the effective config (file + SEMSPEC_* overrides + defaults), secrets masked."""
    cli = cli_context(ctx)
    data = cli.config.model_dump(mode="json")
    if as_json:
        print_json(cli.console, data)
    else:
        cli.console.file.write(f"# effective config of {config_path(cli.repo)}\n")
        cli.console.file.write(yaml.safe_dump(data, sort_keys=False))


@app.command("validate")
def validate(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print problems as JSON."),
) -> None:
    """Check the config and list every problem with file, line and field; exit 2 if any."""
    cli = cli_context(ctx)
    _config, problems = check_config(cli.repo)
    if as_json:
        print_json(
            cli.console,
            {
                "valid": not problems,
                "problems": [
                    {
                        "path": p.path,
                        "line": p.line,
                        "field": p.field,
                        "message": p.message,
                        "expected": p.expected,
                    }
                    for p in problems
                ],
            },
        )
    else:
        for problem in problems:
            cli.err.print(f"error: {problem.as_error()}", markup=False, soft_wrap=True)
        if not problems:
            cli.console.print(f"{config_path(cli.repo)}: valid", markup=False)
    if problems:
        raise typer.Exit(2)


@app.command("reference")
def reference() -> None:
    """Print every config key with its default and meaning (markdown)."""
    from semspec.config.reference import render_reference

    typer.echo(render_reference(), nl=False)
