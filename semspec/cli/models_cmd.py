"""``semspec models list|assign``: the model registry and how a model is chosen for a role."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli import budget_cmd
from semspec.cli.budget_cmd import parse_role, read_task_files
from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table

if TYPE_CHECKING:
    from semspec.model.performance import PerformanceHistory
    from semspec.model.profiles import ModelSpec

app = typer.Typer(help="The model registry and model assignment.", no_args_is_help=True)


def _cost(spec: ModelSpec) -> str:
    if spec.cost is None:
        return "-"
    return f"${spec.cost.input_per_1m:g} / ${spec.cost.output_per_1m:g}"


@app.command("list")
def list_models(
    ctx: typer.Context,
    role: str | None = typer.Option(None, "--role", help="Only models that can take this role."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the registry (configs/models.yaml merged with .semspec/models.yaml)."""
    from semspec.model.registry import load_registry

    cli = cli_context(ctx)
    registry = load_registry(cli.repo)
    specs = registry.for_role(parse_role(role)) if role is not None else list(registry)
    if as_json:
        print_json(cli.console, [spec.model_dump(mode="json") for spec in specs])
        return
    rows = [
        (
            spec.id,
            spec.provider,
            ",".join(spec.capabilities),
            spec.tokenizer or "approx",
            f"{spec.context.context_window:,}",
            f"{spec.context.sweet_spot:,}",
            f"{spec.context.recommended_max_file_tokens:,}",
            _cost(spec),
        )
        for spec in specs
    ]
    columns = ("id", "provider", "roles", "tokenizer", "window", "sweet spot", "max file", "$/1M")
    print_table(cli.console, None, columns, rows)


@app.command("assign")
def assign(
    ctx: typer.Context,
    role: str = typer.Option(..., "--role", help="developer or reviewer."),
    files: list[Path] = typer.Option(..., "--file", help="A task file (repeat for each)."),
    models: list[str] = typer.Option(
        [], "--model", help="Consider only these model ids (repeat); default: all but scripted."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Explain which model would take the role for these files, and why; runs nothing."""
    from semspec.model.performance import MemoryPerformanceHistory
    from semspec.model.registry import load_registry
    from semspec.workflow.assignment import explain_assignment
    from semspec.workflow.context.estimator import TokenEstimator
    from semspec.workflow.performance_graph import GraphPerformanceHistory
    from semspec.workflow.task.context_activities import graph_of

    cli = cli_context(ctx)
    chosen_role = parse_role(role)
    registry = load_registry(cli.repo)
    if models:
        candidates = [registry.get(ident) for ident in models]
    else:
        # The scripted model only replays scripts; it is a candidate only when asked for by name.
        candidates = [spec for spec in registry if spec.provider != "scripted"]
    estimator = TokenEstimator(None)
    texts = read_task_files(cli, files)
    task_tokens = sum(estimator.count(text) for text in texts.values())
    with graph_of(cli.repo, cli.config, create=False) as store:
        history: PerformanceHistory = (
            GraphPerformanceHistory(store) if store is not None else MemoryPerformanceHistory()
        )
        result = explain_assignment(candidates, chosen_role, task_tokens, history)
    if as_json:
        print_json(cli.console, dataclasses.asdict(result))
        return
    chosen = result.chosen or "none (no model qualifies)"
    cli.console.print(
        f"{chosen_role}: {chosen} (task files: {task_tokens:,} tokens, approximate)", markup=False
    )
    rows = [(c.model, "yes" if c.eligible else "no", c.reason) for c in result.candidates]
    print_table(cli.console, None, ("model", "eligible", "reason"), rows)
    if result.chosen is None:
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    """Add the ``models`` group and the ``budget`` command to the root app."""
    root.add_typer(app, name="models")
    budget_cmd.register(root)
