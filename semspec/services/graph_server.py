"""The Oxigraph server ``semspec up`` starts over ``.semspec/graph/``, so that every process of
the stack (workers, CLI commands) shares one graph: the store directory can be opened by one
process only, and only once.

The server comes from the PyPI package ``oxigraph`` (its ``oxigraph serve`` console script) and
listens on loopback. Its query and update URLs are recorded in ``.semspec/run/services.json``;
``services.graph_access`` sends every process there while it runs.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from semspec.core.config.models import SemspecConfig
from semspec.core.run_folder import ServiceRecord, make_private_dir
from semspec.graph.access import graph_location
from semspec.services.ports import free_port
from semspec.services.specs import LaunchPlan, binary, version_of

PROBE_TIMEOUT_S = 1.0
# The cheapest query a SPARQL endpoint answers only once its store is open.
_PROBE = "?query=" + quote("ASK {}")


def sparql_answers(query_url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when ``query_url`` answers a SPARQL ASK within ``timeout`` seconds."""
    request = urllib.request.Request(
        query_url + _PROBE, headers={"Accept": "application/sparql-results+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False


class GraphSpec:
    """``oxigraph serve`` on the repository's graph directory, loopback only."""

    name = "graph"
    depends_on: tuple[str, ...] = ()

    def external_address(self, config: SemspecConfig) -> str | None:
        return config.graph.query_url if config.graph.mode == "sparql" else None

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        port = free_port((keep or {}).get("http") or config.services.graph.port, avoid=taken)
        location = graph_location(config, repo)
        make_private_dir(location)
        argv = [
            binary("oxigraph"),
            "serve",
            "--location",
            str(location),
            "--bind",
            f"127.0.0.1:{port}",
            # The embedded store reads its default graph as the union of the named ones;
            # the server does the same so a query means one thing in both modes.
            "--union-default-graph",
        ]
        base = f"http://127.0.0.1:{port}"
        extra = {
            "query_url": f"{base}/query",
            "update_url": f"{base}/update",
            "location": str(location),
        }
        return LaunchPlan(argv, base, {"http": port}, extra)

    def healthy(self, record: ServiceRecord) -> bool:
        return sparql_answers(record.extra.get("query_url", record.address + "/query"))

    def startup_hint(self, record: ServiceRecord) -> str:
        """What to do when the server exits while starting (the usual cause is the lock)."""
        location = record.extra.get("location", "the graph directory")
        return (
            f"see its log: {record.log}; if it says LOCK, another process holds {location} "
            "open (a semspec command or worker started while the stack was down): stop it, "
            "then run `semspec up` again"
        )

    def check_external(self, config: SemspecConfig) -> bool:
        return sparql_answers(config.graph.query_url or "")

    def version(self) -> str:
        return version_of([binary("oxigraph"), "--version"])
