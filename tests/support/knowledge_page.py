"""The console's knowledge page rendered without a server, from a repository's graph, as its
handler fills the template."""

from __future__ import annotations

from pathlib import Path

from semspec.console.knowledge_data import gather
from semspec.console.state import template_environment
from semspec.graph.store import GraphStore


def render_knowledge(store: GraphStore, repo: Path) -> str:
    """``knowledge.html`` of what ``store`` holds about ``repo`` (the first 50 rows)."""
    return (
        template_environment()
        .get_template("knowledge.html")
        .render(
            k=gather(store, repo),
            problem="",
            shown=50,
            request=None,
            url_for=lambda *a, **k: "/",
            active="knowledge",
            page_status={"escalations": None, "monitor": ""},
        )
    )
