"""``semspec budget --file F... [--model M]``: the context budget of a task, line by line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from semspec.cli.context import CliContext, cli_context
from semspec.cli.output import print_json
from semspec.core.errors import InputError
from semspec.core.path_refusal import os_refusal

if TYPE_CHECKING:
    from semspec.model.profiles import ModelSpec, Role
    from semspec.workflow.context.budget import BudgetReport

DEFAULT_OUTPUT_TOKENS = 4_000
EXIT_TOO_LARGE = 1


def parse_role(value: str) -> Role:
    """``value`` as a role, or an InputError naming ``--role``."""
    from semspec.model.profiles import ROLES

    for role in ROLES:
        if value == role:
            return role
    raise InputError(f"--role: unknown role {value!r}", hint=f"use one of: {', '.join(ROLES)}")


def read_task_files(cli: CliContext, files: list[Path]) -> dict[str, str]:
    """Text of each ``--file`` (relative to the cwd, else to the repository), keyed as given."""
    texts: dict[str, str] = {}
    for given in files:
        refusal = os_refusal(given) or (
            None if given.is_absolute() else os_refusal(cli.repo / given)
        )
        if refusal is not None:
            raise InputError(f"--file {given}: {refusal}", hint="pass a shorter, readable path")
        path = given if given.exists() or given.is_absolute() else cli.repo / given
        if not path.is_file():
            raise InputError(
                f"--file {given}: no such file",
                hint="pass paths relative to the current directory or the repository root",
            )
        try:
            texts[str(given)] = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"--file {given}: cannot read ({exc.strerror})") from exc
    return texts


def count_task_files(texts: dict[str, str], spec: ModelSpec) -> tuple[dict[str, int], bool, str]:
    """Tokens per file for ``spec``'s tokenizer, whether approximate, and the encoding used."""
    from semspec.workflow.context.estimator import TokenEstimator

    estimator = TokenEstimator(spec.tokenizer)
    counts = {path: estimator.count(text) for path, text in texts.items()}
    return counts, estimator.approximate, estimator.encoding_name


def _print_report(cli: CliContext, spec: ModelSpec, report: BudgetReport, how: str) -> None:
    out = cli.console
    out.print(f"budget for model {spec.id} (token counts: {how})", markup=False)
    width = max(len(line.label) for line in report.lines) + 2
    for line in report.lines:
        sign = line.sign or " "
        out.print(f"{sign} {line.label:<{width}}{line.tokens:>12,}", markup=False)
    out.print(f"verdict: {report.verdict}", markup=False)
    for reason in report.reasons:
        out.print(f"  - {reason.message}", markup=False)
    if report.oversized_file is not None:
        big = report.oversized_file
        out.print(
            f"  file {big.path} alone holds {big.tokens:,} tokens (limit {big.limit:,})",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    """Add ``budget`` to the root app."""

    @app.command("budget")
    def budget(
        ctx: typer.Context,
        files: list[Path] = typer.Option(..., "--file", help="A task file (repeat for each)."),
        model: str | None = typer.Option(
            None, "--model", help="Model id (default: the config's model for --role)."
        ),
        role: str = typer.Option("developer", "--role", help="developer or reviewer."),
        system_tokens: int | None = typer.Option(
            None, "--system-tokens", min=0, help="System prompt tokens (default: the profile's)."
        ),
        plan_tokens: int = typer.Option(0, "--plan-tokens", min=0, help="Plan context tokens."),
        task_tokens: int = typer.Option(0, "--task-tokens", min=0, help="Task context tokens."),
        output_tokens: int = typer.Option(
            DEFAULT_OUTPUT_TOKENS, "--output-tokens", min=0, help="Estimated output tokens."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Print the task's context budget line by line and whether it fits the model.

        Exits 0 when the task fits, 1 when it is too large (split or refused), so scripts can
        check a task before submitting it.
        """
        from semspec.model.registry import load_registry
        from semspec.workflow.context.budget import compute_budget
        from semspec.workflow.context.decompose import Refusal, limits_from_budget, plan_subtasks

        cli = cli_context(ctx)
        chosen_role = parse_role(role)
        model_id = model or getattr(cli.config.models, chosen_role).model
        spec = load_registry(cli.repo).get(model_id)
        counts, approximate, encoding = count_task_files(read_task_files(cli, files), spec)
        system = spec.context.system_prompt_overhead if system_tokens is None else system_tokens
        report = compute_budget(
            spec.context,
            system,
            plan_tokens,
            task_tokens,
            output_tokens,
            counts,
            cli.config.context,
        )
        split: list[list[str]] | Refusal | None = None
        if not report.fits:
            split = plan_subtasks(counts, {}, limits_from_budget(report))
        if as_json:
            data: dict[str, Any] = {
                "model": spec.id,
                "encoding": encoding,
                "approximate": approximate,
                **dataclasses.asdict(report),
                "subtasks": split if isinstance(split, list) else None,
                "refusal": dataclasses.asdict(split) if isinstance(split, Refusal) else None,
            }
            print_json(cli.console, data)
            raise typer.Exit(EXIT_TOO_LARGE if not report.fits else 0)
        how = f"{encoding}, {'approximate' if approximate else 'exact'}"
        _print_report(cli, spec, report, how)
        if isinstance(split, Refusal):
            cli.console.print(f"cannot decompose: {split.message}", markup=False)
        elif split:
            cli.console.print("suggested subtasks:", markup=False)
            for number, group in enumerate(split, start=1):
                cli.console.print(f"  {number}. {', '.join(group)}", markup=False)
        if not report.fits:
            raise typer.Exit(EXIT_TOO_LARGE)
