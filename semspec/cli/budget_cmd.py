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
    from semspec.workflow.context.sizing import SizedRole

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


def _print_report(cli: CliContext, sized: SizedRole, report: BudgetReport, how: str) -> None:
    out = cli.console
    out.print(f"budget for model {sized.model} (token counts: {how})", markup=False)
    if sized.note:
        out.print(f"note: {sized.note}", markup=False)
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
        output_tokens: int | None = typer.Option(
            None,
            "--output-tokens",
            min=0,
            help="Estimated output tokens (default: the profile's largest reply, at most 4,000).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Print the task's context budget line by line and whether it fits the model.

        Exits 0 when the task fits, 1 when it is too large (split or refused), so scripts can
        check a task before submitting it.
        """
        from semspec.core.config.roles import names_own_server
        from semspec.model.registry import load_registry
        from semspec.model.role_check import check_role
        from semspec.workflow.context.decompose import Refusal, limits_from_budget, plan_subtasks
        from semspec.workflow.context.sizing import raise_limit_hint, size_role, task_budget

        cli = cli_context(ctx)
        chosen_role = parse_role(role)
        registry = load_registry(cli.repo)
        configured = getattr(cli.config.models, chosen_role)
        if model is not None:
            configured = configured.model_copy(update={"model": model})
            if model not in registry and not names_own_server(configured):
                registry.get(model)  # a typo in --model: not found, with the near ids
        # The worker's own checks and sizing (workflow/context/sizing.py), so `budget` accepts
        # and sizes every role the worker runs, e.g. any model of the user's own server.
        check_role(configured, cli.repo, name=chosen_role)
        sized = size_role(configured, registry)
        spec = sized.spec
        counts, approximate, encoding = count_task_files(read_task_files(cli, files), spec)
        report = task_budget(
            sized,
            cli.config.context,
            counts,
            task_tokens=task_tokens,
            plan_tokens=plan_tokens,
            system_tokens=system_tokens,
            output_tokens=output_tokens,
        )
        raise_hint = None
        if any(r.code == "file_tokens_over_limit" for r in report.reasons):
            raise_hint = raise_limit_hint(sized, report, cli.config.context, chosen_role)
        split: list[list[str]] | Refusal | None = None
        if not report.fits:
            split = plan_subtasks(counts, {}, limits_from_budget(report))
        if as_json:
            data: dict[str, Any] = {
                "model": sized.model,
                "profile": spec.id,
                "note": sized.note,
                "raise_limit": raise_hint,
                "encoding": encoding,
                "approximate": approximate,
                **dataclasses.asdict(report),
                "subtasks": split if isinstance(split, list) else None,
                "refusal": dataclasses.asdict(split) if isinstance(split, Refusal) else None,
            }
            print_json(cli.console, data)
            raise typer.Exit(EXIT_TOO_LARGE if not report.fits else 0)
        how = f"{encoding}, {'approximate' if approximate else 'exact'}"
        _print_report(cli, sized, report, how)
        if isinstance(split, Refusal):
            cli.console.print(f"cannot decompose: {split.message}", markup=False)
        elif split:
            cli.console.print("suggested subtasks:", markup=False)
            for number, group in enumerate(split, start=1):
                cli.console.print(f"  {number}. {', '.join(group)}", markup=False)
        if raise_hint is not None:
            cli.console.print(f"to raise the file limit: {raise_hint}", markup=False)
        if not report.fits:
            raise typer.Exit(EXIT_TOO_LARGE)
