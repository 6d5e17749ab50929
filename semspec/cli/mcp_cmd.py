"""``semspec mcp``: serve search, read, meaning_pack and evidence_fetch over MCP on stdio."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from semspec import __version__
from semspec.cli.context import cli_context
from semspec.core.errors import InputError, SemspecError

if TYPE_CHECKING:
    from semspec.agents.mcp_tools import PackBuilder
    from semspec.core.config import SemspecConfig

GATE_MODES = ("enforce", "advise", "off")


def _pack_builder(config: SemspecConfig, repo: Path) -> PackBuilder:
    """Meaning packs from the code index; the store is opened per call so a worker can share it."""

    from semspec.agents.workspace import ToolError

    def build(paths: Sequence[str]) -> str:
        from semspec.graph.access import open_graph
        from semspec.knowledge.code_index import meaning_pack

        try:
            store = open_graph(config, repo)
        except SemspecError as exc:
            raise ToolError(f"meaning graph unavailable: {exc.message}") from exc
        try:
            return meaning_pack(store, paths).text
        finally:
            store.close()

    return build


def mcp(
    ctx: typer.Context,
    gate: str = typer.Option(
        "enforce", "--gate", help="Search-before-read gate: enforce, advise or off."
    ),
) -> None:
    """Serve the repository's read/search tools to an external agent over MCP (stdio)."""
    # The MCP SDK alone takes longer to import than the rest of the CLI: only this command pays.
    from semspec.agents.mcp_server import build_server, serve_stdio
    from semspec.agents.mcp_tools import McpToolset
    from semspec.agents.stabilization import StabilizationPolicy, Stabilizer
    from semspec.agents.stabilization.policy import GateMode
    from semspec.agents.stabilization.session import new_connection_id
    from semspec.agents.workspace import Workspace

    if gate not in GATE_MODES:
        raise InputError(
            f"--gate: unknown mode {gate!r}", hint=f"use one of {', '.join(GATE_MODES)}"
        )
    cli = cli_context(ctx)
    toolset = McpToolset(
        Workspace(cli.repo),
        Stabilizer(StabilizationPolicy(gate_mode=cast(GateMode, gate))),
        connection_id=new_connection_id(),  # stdio is one connection
        pack=_pack_builder(cli.config, cli.repo),
    )
    serve_stdio(build_server(toolset, version=__version__))


def register(root: typer.Typer) -> None:
    """Add the ``mcp`` command to the root app."""
    root.command("mcp")(mcp)
