"""``semspec review context``: the context the reviewer would get, and its budget."""

from __future__ import annotations

from pathlib import Path

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table
from semspec.errors import InputError
from semspec.services.graph_access import open_graph
from vocabulary.store import GraphStore
from workflow.context.assembler import AssemblyRequest, assemble_review_context

app = typer.Typer(help="Inspect what the reviewer is given.", no_args_is_help=True)


def _file_summaries(store: GraphStore, files: list[str]) -> dict[str, str] | None:
    # The code indexer's richer summaries when it is installed; otherwise the assembler reads
    # the shared code vocabulary itself.
    try:
        from processors.code_index.summary import file_summaries
    except ImportError:
        return None
    return file_summaries(store, files)


def _relative(repo: Path, name: str) -> str:
    path = Path(name)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(repo).as_posix()
        except ValueError as exc:
            raise InputError(
                f"--file {name} is outside the repository {repo}",
                hint="pass paths inside the repository (relative paths are taken from its root)",
            ) from exc
    return path.as_posix()


def _from_task(ctx: typer.Context, task_id: str) -> tuple[list[str], str | None, str]:
    """Task files, plan id and current diff of a submitted task."""
    from pathlib import Path as _Path

    from semspec.cli.runtime import run_with_client
    from semspec.task_client import task_status
    from workflow.git.diff import worktree_diff

    cli = cli_context(ctx)
    status = run_with_client(cli, lambda client, _e: task_status(client, task_id))
    diff = ""
    if status.worktree and status.base_commit and _Path(status.worktree).is_dir():
        diff = worktree_diff(_Path(status.worktree), status.base_commit).patch
    return list(status.task_files), status.plan_id, diff


@app.command("context")
def context(
    ctx: typer.Context,
    task_id: str | None = typer.Argument(None, help="A submitted task (files, plan and diff)."),
    files: list[str] = typer.Option([], "--file", "-f", help="Task file (repeatable)."),
    plan: str | None = typer.Option(None, "--plan", help="Plan id, for its decisions."),
    window: int = typer.Option(32_000, "--window", min=1, help="Reviewer window in tokens."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Assemble the reviewer's context for TASK_ID or --file FILES, with a budget table."""
    cli = cli_context(ctx)
    diff = ""
    if task_id is not None:
        task_files, task_plan, diff = _from_task(ctx, task_id)
        files = files or task_files
        plan = plan or task_plan
    if not files:
        raise InputError("give a TASK_ID or at least one --file", hint="e.g. --file src/app.py")
    rel = [_relative(cli.repo, f) for f in files]
    reviewer = cli.config.context.reviewer
    request = AssemblyRequest(
        task_files=tuple(rel),
        task_id=task_id,
        diff=diff,
        plan_id=plan,
        window_tokens=window,
        system_prompt_tokens=reviewer.system_prompt_tokens,
        working_memory_tokens=reviewer.working_memory_tokens,
        output_tokens=reviewer.output_tokens,
        safety_margin=reviewer.safety_margin,
    )
    store = open_graph(cli.config, cli.repo)
    try:
        summaries = _file_summaries(store, rel)
        if summaries is not None:
            request = AssemblyRequest(**{**vars(request), "file_summaries": summaries})
        assembled = assemble_review_context(store, request)
    finally:
        store.close()
    if as_json:
        print_json(cli.console, assembled.as_dict())
        return
    cli.console.file.write(assembled.text)
    rows = [
        (
            s.name,
            s.tokens,
            f"{s.share:.1%}",
            len(s.items),
            ", ".join(s.trimmed),
            ", ".join(s.dropped),
        )
        for s in assembled.sections
    ]
    print_table(
        cli.console,
        f"budget {assembled.budget_tokens} tokens, used {assembled.used_tokens}",
        ["section", "tokens", "share", "items", "trimmed", "dropped"],
        rows,
    )
    for note in assembled.notes[1:]:
        cli.console.print(f"note: {note}", markup=False, soft_wrap=True)
