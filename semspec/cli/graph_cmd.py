"""``semspec graph query``: run SPARQL against the knowledge graph."""

from __future__ import annotations

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table

app = typer.Typer(help="Query the knowledge graph.", no_args_is_help=True)


@app.command("query")
def query(
    ctx: typer.Context,
    sparql: str = typer.Argument(..., metavar="SPARQL", help="A SPARQL 1.1 SELECT query."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as JSON."),
) -> None:
    """Run a SELECT query and print its rows (named graphs need ``GRAPH ?g { ... }``)."""
    from semspec.graph.access import open_graph

    cli = cli_context(ctx)
    store = open_graph(cli.config, cli.repo)
    try:
        rows = store.select(sparql)
    finally:
        store.close()
    plain = [{k: None if v is None else str(v) for k, v in row.items()} for row in rows]
    if as_json:
        print_json(cli.console, plain)
        return
    columns = list(plain[0]) if plain else []
    print_table(cli.console, f"{len(plain)} row(s)", columns, [list(r.values()) for r in plain])
