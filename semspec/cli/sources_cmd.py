"""``semspec sources sync|list|show``: SOP files and rule files of other tools (``AGENTS.md``,
``CLAUDE.md``, ``.cursor/rules``, ``.github/instructions``) in the knowledge graph."""

from __future__ import annotations

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table, print_text

app = typer.Typer(
    help="Ingest and inspect SOPs under .semspec/sources/docs/sops/ and the rule files of other "
    "tools (AGENTS.md, CLAUDE.md, .cursor/rules, .github/instructions).",
    no_args_is_help=True,
)


@app.command("sync")
def sync(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Bring the graph in line with the SOP and rule files; broken files are named and exit 2."""
    from semspec.graph.access import open_graph
    from semspec.knowledge.sources.sync import sync_sources

    cli = cli_context(ctx)
    store = open_graph(cli.config, cli.repo)
    try:
        report = sync_sources(store, cli.repo, cli.config.sources.rules)
    finally:
        store.close()
    if as_json:
        print_json(cli.console, report.as_dict())
    else:
        rows = [
            *[("added", p, "") for p in report.added],
            *[("updated", p, "") for p in report.updated],
            *[("removed", p, "") for p in report.removed],
            *[("failed", p, problem) for p, problem in report.failed],
        ]
        if rows:
            print_table(cli.console, "SOP sync", ["change", "file", "problem"], rows)
        cli.console.print(
            f"{len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.removed)} removed, {len(report.skipped)} unchanged, "
            f"{len(report.failed)} failed",
            markup=False,
        )
        for path, problem in report.failed:
            cli.err.print(f"error: {path}: {problem}", markup=False, soft_wrap=True)
        for path, problem in report.warnings:
            cli.err.print(f"warning: {path}: {problem}", markup=False, soft_wrap=True)
    if report.failed:
        raise typer.Exit(2)


@app.command("list")
def list_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the SOPs and rules in the graph, with where each comes from."""
    from semspec.graph.access import open_graph
    from semspec.knowledge.sources.catalog import list_sops

    cli = cli_context(ctx)
    store = open_graph(cli.config, cli.repo)
    try:
        entries = list_sops(store)
    finally:
        store.close()
    if as_json:
        print_json(cli.console, [e.as_dict() for e in entries])
        return
    rows = [
        (e.sop_id, e.origin, e.path, e.severity, ", ".join(e.applies_to), e.chunks, e.title)
        for e in entries
    ]
    columns = ["id", "origin", "path", "severity", "applies_to", "chunks", "title"]
    print_table(cli.console, "SOPs and rules", columns, rows)


@app.command("show")
def show(
    ctx: typer.Context,
    sop_id: str = typer.Argument(..., metavar="ID", help="SOP id (see `semspec sources list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one SOP: metadata, summary, requirements and chunks."""
    from semspec.graph.access import open_graph
    from semspec.knowledge.sources.catalog import show_sop

    cli = cli_context(ctx)
    store = open_graph(cli.config, cli.repo)
    try:
        detail = show_sop(store, sop_id)
    finally:
        store.close()
    if as_json:
        print_json(cli.console, detail.as_dict())
        return
    entry = detail.entry
    out = [
        f"{entry.sop_id}: {entry.title}",
        f"path: {entry.path}",
        f"origin: {entry.origin}"
        + (f" (imports {', '.join(entry.imports)})" if entry.imports else ""),
        f"category: {entry.category}  severity: {entry.severity}",
        f"applies_to: {', '.join(entry.applies_to)}",
        f"summary: {detail.summary}",
        "requirements:",
        *[f"  {i}. {r}" for i, r in enumerate(detail.requirements, start=1)],
    ]
    for index, chunk in enumerate(detail.chunks):
        out += [f"--- chunk {index} ---", chunk]
    print_text(cli.console, "\n".join(out) + "\n")
