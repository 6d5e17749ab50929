"""``semspec config show|validate``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json

if TYPE_CHECKING:
    from semspec.core.config import ConfigProblem

app = typer.Typer(help="Show or validate .semspec/config.yaml.", no_args_is_help=True)


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of YAML."),
) -> None:
    """Print the effective config (file + SEMSPEC_* overrides + defaults), secrets masked."""
    import yaml

    from semspec.core.config import config_path

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
    """Check the config and the model registry; exit 2 if anything is wrong.

    Every problem is listed with file, line, field and a hint (did-you-mean for unknown keys,
    providers and models)."""
    from semspec.core.config import config_path

    cli = cli_context(ctx)
    problems = _problems(cli.repo)
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
                        "hint": p.as_error().hint,
                    }
                    for p in problems
                ],
            },
        )
    else:
        for problem in problems:
            error = problem.as_error()
            cli.err.print(f"error: {error}", markup=False, soft_wrap=True)
            cli.err.print(f"hint: {error.hint}", markup=False, soft_wrap=True)
        if not problems:
            cli.console.print(f"{config_path(cli.repo)}: valid", markup=False)
    if problems:
        raise typer.Exit(2)


def _problems(repo: Path) -> list[ConfigProblem]:
    """The config's problems, models checked against the registry (a broken registry is one)."""
    from semspec.core.config import ConfigProblem, check_config
    from semspec.core.errors import ConfigError
    from semspec.model.registry import load_registry

    try:
        model_ids: list[str] | None = load_registry(repo).ids
        broken: list[ConfigProblem] = []
    except ConfigError as exc:
        model_ids = None  # providers are still checked; models need a readable registry
        where = exc.path or str(repo / ".semspec" / "models.yaml")
        broken = [
            ConfigProblem(where, exc.field or "", exc.problem, exc.line, exc.expected, exc.hint)
        ]
    _config, problems = check_config(repo, model_ids=model_ids)
    return problems + broken


@app.command("reference")
def reference() -> None:
    """Print every config key with its default and meaning (markdown)."""
    from semspec.core.config.reference import render_reference

    typer.echo(render_reference(), nl=False)
