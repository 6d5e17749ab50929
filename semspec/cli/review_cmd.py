"""``semspec review context``: the context the reviewer would get, its budget, and which SOPs
and rules it was given in full, cut, or left out (with each rule's origin)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table, print_text
from semspec.core.errors import GitError, InputError
from semspec.core.path_refusal import os_refusal

app = typer.Typer(help="Inspect what the reviewer is given.", no_args_is_help=True)


def _relative(repo: Path, name: str) -> str:
    """``name`` as a repo-relative path of a regular file in the repository."""
    root = repo.resolve()
    given = Path(name)
    candidate = given if given.is_absolute() else root / given
    refusal = os_refusal(candidate)
    if refusal is not None:
        raise InputError(f"--file {name}: {refusal}", hint="pass a shorter, readable path")
    try:
        rel = Path(os.path.normpath(candidate)).relative_to(root).as_posix()
        inside = candidate.resolve().is_relative_to(root)
    except ValueError:
        rel, inside = "", False
    if not inside or rel in ("", "."):
        raise InputError(
            f"--file {name} is outside the repository {repo}",
            hint="pass paths inside the repository (relative paths are taken from its root)",
        )
    if not candidate.is_file():
        what = "is not a regular file" if candidate.exists() else "does not exist"
        raise InputError(
            f"--file {name} {what} in the repository {repo}",
            hint="pass an existing file, or a TASK_ID for a task's files (new ones included)",
        )
    return rel


def _from_task(ctx: typer.Context, task_id: str) -> tuple[list[str], str | None, str, str | None]:
    """Task files, plan id, current diff and base commit of a submitted task."""
    from pathlib import Path as _Path

    from semspec.cli.runtime import run_with_client
    from semspec.client.task_client import task_status
    from semspec.workflow.git.diff import commit_patch, worktree_diff
    from semspec.workflow.task.secret_guard import masked

    cli = cli_context(ctx)
    status = run_with_client(cli, lambda client, _e: task_status(client, task_id))
    diff = ""
    head = status.commit_id or status.branch
    if status.worktree and status.base_commit and _Path(status.worktree).is_dir():
        diff = worktree_diff(_Path(status.worktree), status.base_commit).patch
    elif status.base_commit and head:
        # An ended task's worktree is gone (docs/landing.md, "Clean up"): its commit holds it.
        with contextlib.suppress(GitError):  # a branch deleted since: no diff to show
            diff = commit_patch(cli.repo, status.base_commit, head)
    diff = masked(cli.repo, diff)  # as the reviewer agent sees it
    return list(status.task_files), status.plan_id, diff, status.base_commit


@app.command("context")
def context(
    ctx: typer.Context,
    task_id: str | None = typer.Argument(None, help="A submitted task (files, plan and diff)."),
    files: list[str] = typer.Option([], "--file", "-f", help="Task file (repeatable)."),
    plan: str | None = typer.Option(None, "--plan", help="Plan id, for its decisions."),
    window: int | None = typer.Option(
        None,
        "--window",
        min=1,
        help="Reviewer window in tokens (default: models.reviewer.context_window, else the "
        "registry's figure for the reviewer's model, else 32,768).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Assemble the reviewer's context for TASK_ID or --file FILES, with a budget table."""
    from semspec.graph.access import open_graph
    from semspec.workflow.task.review_context import assemble_for_review, reviewer_window

    cli = cli_context(ctx)
    diff = ""
    base: tuple[Path, str] | None = None
    # Files given by hand must exist; a task's own files may be ones it creates.
    rel = [_relative(cli.repo, f) for f in files]
    if task_id is not None:
        task_files, task_plan, diff, base_commit = _from_task(ctx, task_id)
        # As the reviewer got them: the rule files of the task's base commit.
        base = (cli.repo, base_commit) if base_commit else None
        rel = rel or task_files
        plan = plan or task_plan
    if not rel:
        raise InputError("give a TASK_ID or at least one --file", hint="e.g. --file src/app.py")
    window = window or reviewer_window(cli.repo, cli.config)
    store = open_graph(cli.config, cli.repo)
    try:
        assembled = assemble_for_review(
            store, cli.config, rel, window, task_id=task_id, plan_id=plan, diff=diff, base=base
        )
    finally:
        store.close()
    if as_json:
        print_json(cli.console, assembled.as_dict())
        return
    print_text(cli.console, assembled.text)
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
    if assembled.rules:
        print_table(
            cli.console,
            "rules for these files"
            + (
                f" (rule files as on {assembled.rules_commit[:12]})"
                if assembled.rules_commit
                else ""
            ),
            ["rule", "origin", "severity", "given", "sections"],
            [
                (
                    r.rule_id,
                    r.origin,
                    r.severity,
                    r.given.replace("_", " "),
                    f"{r.sections_given}/{r.sections_total}",
                )
                for r in assembled.rules
            ],
        )
    for note in assembled.notes[1:]:
        cli.console.print(f"note: {note}", markup=False, soft_wrap=True)
    for section in assembled.sections:
        for cut in section.cuts:
            cli.console.print(f"cut: {cut}", markup=False, soft_wrap=True)
