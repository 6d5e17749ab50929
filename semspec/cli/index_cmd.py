"""``semspec index`` (update the code meaning graph), ``index pack`` and ``index summary``."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from semspec.cli.context import CliContext, cli_context
from semspec.cli.output import print_json, print_text
from semspec.core.errors import InputError, NotFoundError
from semspec.core.path_refusal import os_refusal

if TYPE_CHECKING:
    from semspec.graph.store import GraphStore
    from semspec.knowledge.code_index.indexer import IndexReport

app = typer.Typer(
    help="Index the repository's code into the meaning graph; pack or summarize files.",
    invoke_without_command=True,
)

FILES_OPTION = typer.Option(..., "--file", "-f", help="File to include (repeatable).")


@contextmanager
def _store(cli: CliContext) -> Iterator[GraphStore]:
    from semspec.graph.access import open_graph

    store = open_graph(cli.config, cli.repo)
    try:
        yield store
    finally:
        store.close()


@app.callback()
def index(
    ctx: typer.Context,
    as_json: bool = typer.Option(
        False, "--json", help="Print the report as JSON, with timings (no progress bar)."
    ),
) -> None:
    """Index new and changed files (unchanged ones are not read again); report what happened.

    A progress bar (files/s, time left) shows on stderr when it is a terminal.
    """
    if ctx.invoked_subcommand is not None:
        return
    from semspec.knowledge.code_index import index_repository
    from semspec.knowledge.code_index.index_record import record_path

    cli = cli_context(ctx)
    record = record_path(cli.config, cli.repo)
    with _store(cli) as store, progress_bar(cli.err, enabled=not as_json) as progress:
        report = index_repository(
            store, cli.repo, cli.config.index, record=record, progress=progress
        )
    if as_json:
        print_json(cli.console, report.as_dict())
    else:
        _print_report(cli, report)


class _FilesPerSecond(ProgressColumn):
    """Files read per second, as rich measures it."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0:,.0f} files/s")


class _Bar:
    """A rich progress bar over the files an index run reads."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._task = self._progress.add_task("indexing", total=total)

    def advance(self) -> None:
        if self._task is not None:
            self._progress.advance(self._task)


@contextmanager
def progress_bar(console: Console, *, enabled: bool) -> Iterator[_Bar | None]:
    """A bar on ``console`` (files done, files/s, time left) when it is a terminal and
    ``enabled``; None otherwise, so pipes and ``--json`` get no control codes."""
    if not (enabled and console.is_terminal):
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _FilesPerSecond(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield _Bar(progress)


def _print_report(cli: CliContext, report: IndexReport) -> None:
    out = cli.console.file
    out.write(
        f"indexed {len(report.indexed)}, unchanged {len(report.unchanged)}, "
        f"removed {len(report.removed)}, skipped {len(report.skipped)}, "
        f"failed {len(report.failed)}\n"
    )
    reasons = Counter(s.reason.split(" (")[0] for s in report.skipped)
    for reason, count in sorted(reasons.items()):
        out.write(f"  skipped {count}: {reason}\n")
    for skipped in report.skipped:
        if skipped.reason.startswith("refused"):
            out.write(f"  {skipped.path}: {skipped.reason}\n")
    for failure in report.failed:
        cli.err.print(
            f"error: {failure.path}:{failure.line}: {failure.message}", markup=False, soft_wrap=True
        )


def repo_relative(repo: Path, given: str) -> str:
    """``given`` (relative to the cwd, or absolute) as a path relative to ``repo``."""
    root = os.path.realpath(repo)
    candidate = Path(given)
    refusal = os_refusal(candidate) or os_refusal(Path(root) / candidate)
    if refusal is not None:
        raise InputError(f"--file {given}: {refusal}", hint="pass a shorter, readable path")
    if not candidate.is_absolute():
        in_cwd = Path.cwd() / candidate
        candidate = in_cwd if in_cwd.exists() else Path(root) / candidate
    full = os.path.realpath(candidate)
    if full != root and not full.startswith(root + os.sep):
        raise InputError(
            f"--file {given}: resolves to {full}, outside the repository {root}",
            hint="name files inside the repository",
        )
    return os.path.relpath(full, root).replace(os.sep, "/")


def _wanted(cli: CliContext, files: list[str]) -> list[str]:
    return sorted({repo_relative(cli.repo, f) for f in files})


def _check_indexed(wanted: list[str], found: set[str]) -> None:
    missing = [p for p in wanted if p not in found]
    if missing:
        raise NotFoundError(
            "indexed file",
            ", ".join(missing),
            hint="run `semspec index` first (and check the file is a source file)",
        )


@app.command("pack")
def pack(
    ctx: typer.Context,
    files: list[str] = FILES_OPTION,
    private: bool = typer.Option(False, "--private", help="Also pack _private names."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON with the pack and counts."),
) -> None:
    """Print the meaning pack of the given files: a dictionary, then claims with line spans."""
    from semspec.knowledge.code_index import pack_facts
    from semspec.knowledge.code_index.graph_read import read_facts

    cli = cli_context(ctx)
    wanted = _wanted(cli, files)
    with _store(cli) as store:
        found = read_facts(store, wanted)
    _check_indexed(wanted, set(found))
    result = pack_facts(found.values(), private=private)
    if as_json:
        print_json(
            cli.console,
            {
                "files": wanted,
                "text": result.text,
                "claims": result.claims,
                "claims_with_evidence": result.claims_with_evidence,
            },
        )
    else:
        print_text(cli.console, result.text)


@app.command("summary")
def summary(
    ctx: typer.Context,
    files: list[str] = FILES_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON keyed by path."),
) -> None:
    """Print the short summary (symbols, imports, boundaries with lines) of the given files."""
    from semspec.knowledge.code_index import file_summaries

    cli = cli_context(ctx)
    wanted = _wanted(cli, files)
    with _store(cli) as store:
        found = file_summaries(store, wanted)
    _check_indexed(wanted, set(found))
    if as_json:
        print_json(cli.console, found)
    else:
        cli.console.file.write("\n\n".join(found[p] for p in wanted) + "\n")
