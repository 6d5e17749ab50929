"""``semspec models list|assign``: the model registry and how a model is chosen for a role."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from semspec.cli import budget_cmd
from semspec.cli.budget_cmd import parse_role, read_task_files
from semspec.cli.context import CliContext, cli_context
from semspec.cli.output import print_json, print_table

if TYPE_CHECKING:
    from semspec.model.performance import PerformanceHistory
    from semspec.model.profiles import ModelSpec
    from semspec.model.registry import ModelRegistry

app = typer.Typer(help="The model registry and model assignment.", no_args_is_help=True)


NOT_RECORDED = "not recorded"


def _cost(spec: ModelSpec) -> str:
    """Input, cached input and output dollars per 1M tokens; ``-`` for a model without a price."""
    cost = spec.cost
    if cost is None:
        return "-"
    cached = "=in" if cost.cached_input_per_1m is None else f"${cost.cached_input_per_1m:g}"
    return f"${cost.input_per_1m:g} / {cached} / ${cost.output_per_1m:g}"


def _as_of(spec: ModelSpec) -> str:
    """The date the price was recorded, or why there is none."""
    cost = spec.cost
    if cost is None:
        return "unknown price"
    return cost.as_of.isoformat() if cost.as_of is not None else NOT_RECORDED


def _sources(specs: list[ModelSpec]) -> dict[str, list[str]]:
    """Model ids by the source of their price (``not recorded`` for a price without one)."""
    by_source: dict[str, list[str]] = {}
    for spec in specs:
        if spec.cost is not None:
            by_source.setdefault(spec.cost.source or NOT_RECORDED, []).append(spec.id)
    return by_source


@app.command("list")
def list_models(
    ctx: typer.Context,
    role: str | None = typer.Option(None, "--role", help="Only models that can take this role."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the registry (configs/models.yaml merged with .semspec/models.yaml).

    Each model's roles, context sizes, and prices with their date and source."""
    from semspec.model.registry import load_registry

    cli = cli_context(ctx)
    registry = load_registry(cli.repo)
    specs = registry.for_role(parse_role(role)) if role is not None else list(registry)
    limits = _file_limits(cli, registry, specs)
    if as_json:
        rows_json = [
            {**spec.model_dump(mode="json"), "file_token_limit": limits[spec.id]} for spec in specs
        ]
        print_json(cli.console, rows_json)
        return
    rows = [
        (
            spec.id,
            spec.provider,
            ",".join(spec.capabilities),
            spec.tokenizer or "approx",
            f"{spec.context.context_window:,}",
            f"{spec.context.sweet_spot:,}",
            f"{limits[spec.id]:,}",
            _cost(spec),
            _as_of(spec),
        )
        for spec in specs
    ]
    columns = (
        "id",
        "provider",
        "roles",
        "tokenizer",
        "window",
        "sweet spot",
        "max file",
        "$/1M in/cached/out",
        "price as of",
    )
    print_table(cli.console, None, columns, rows)
    cli.console.print(
        "max file: tokens of task files one task may hold, as `semspec budget` and the worker "
        "compute it (the config's context section and configured windows applied)",
        markup=False,
        soft_wrap=True,
    )
    for source, ids in _sources(specs).items():
        cli.console.print(f"price source {source}: {', '.join(ids)}", markup=False)


def _file_limits(
    cli: CliContext, registry: ModelRegistry, specs: list[ModelSpec]
) -> dict[str, int]:
    """Each model's file token limit, from the function the budget check uses; a model a
    configured role names gets that role's configured window."""
    from semspec.core.config.models import RoleModel
    from semspec.workflow.context.sizing import file_limit, size_role

    config = cli.config
    roles = {role.model: role for role in (config.models.reviewer, config.models.developer)}
    return {
        spec.id: file_limit(
            size_role(roles.get(spec.id, RoleModel(model=spec.id)), registry), config.context
        )
        for spec in specs
    }


def _price_lines(spec: ModelSpec) -> list[tuple[str, str]]:
    cost = spec.cost
    if cost is None:
        return [("price", "unknown (a task with a dollar budget escalates before using it)")]

    def per_1m(value: float | None) -> str:
        return "as input" if value is None else f"${value:g} per 1M tokens"

    return [
        ("input", per_1m(cost.input_per_1m)),
        ("cached input", per_1m(cost.cached_input_per_1m)),
        ("cache write", per_1m(cost.cache_write_per_1m)),
        ("output", per_1m(cost.output_per_1m)),
        ("price source", cost.source or NOT_RECORDED),
        ("price as of", cost.as_of.isoformat() if cost.as_of is not None else NOT_RECORDED),
    ]


@app.command("show")
def show(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="A model id of the registry."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one model of the effective registry: endpoint, roles, context and prices."""
    from semspec.model.registry import load_registry

    cli = cli_context(ctx)
    spec = load_registry(cli.repo).get(model)
    if as_json:
        print_json(cli.console, spec.model_dump(mode="json"))
        return
    context = spec.context
    limit = _file_limits(cli, load_registry(cli.repo), [spec])[spec.id]
    lines = [
        ("id", spec.id),
        ("provider", spec.provider),
        ("api model", spec.wire_name),
        ("base url", spec.endpoint.base_url or "vendor default"),
        ("roles", ", ".join(spec.capabilities)),
        ("tokenizer", spec.tokenizer or "approximate"),
        ("context window", f"{context.context_window:,}"),
        ("effective context", f"{context.effective_context:,}"),
        ("sweet spot", f"{context.sweet_spot:,}"),
        ("recommended max file tokens", f"{context.recommended_max_file_tokens:,}"),
        ("file token limit", f"{limit:,} (as `semspec budget` computes it)"),
        *_price_lines(spec),
    ]
    width = max(len(name) for name, _ in lines)
    for name, value in lines:
        cli.console.print(f"{name:<{width}}  {value}", markup=False, soft_wrap=True)


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
