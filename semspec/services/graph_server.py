"""The graph server ``semspec up`` starts over ``.semspec/graph/``, so that every process of
the stack (workers, CLI commands) shares one graph: the store directory can be opened by one
process only, and only once.

The server is ``semspec.graph.http_server`` on loopback; it answers only requests that carry the
stack's token (``graph.token`` in the run folder, made here). Its query and update URLs and the
token file's path are recorded in ``.semspec/run/services.json``; ``graph.access`` sends every
process there while it runs.
"""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

import pyoxigraph

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import ServiceRecord, make_private_dir
from semspec.graph.access import graph_location
from semspec.graph.server_token import ensure_token, read_token
from semspec.services.ports import free_port
from semspec.services.specs import LaunchPlan

PROBE_TIMEOUT_S = 1.0
# The cheapest query a SPARQL endpoint answers only once its store is open.
_PROBE = "?query=" + quote("ASK {}")


def sparql_answers(
    query_url: str, token_file: str | None = None, timeout: float = PROBE_TIMEOUT_S
) -> bool:
    """True when ``query_url`` answers a SPARQL ASK within ``timeout`` seconds, asked with the
    token ``token_file`` holds (none when None)."""
    headers = {"Accept": "application/sparql-results+json"}
    try:
        if token_file is not None:
            headers["Authorization"] = f"Bearer {read_token(Path(token_file))}"
    except ServiceError:
        return False
    request = urllib.request.Request(query_url + _PROBE, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False


class GraphSpec:
    """``semspec.graph.http_server`` on the repository's graph directory, loopback only, for
    the holder of the stack's token."""

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
        token_file = ensure_token(run_dir)
        argv = [
            sys.executable,
            "-m",
            "semspec.graph.http_server",
            "--location",
            str(location),
            "--port",
            str(port),
            "--token-file",
            str(token_file),
        ]
        base = f"http://127.0.0.1:{port}"
        extra = {
            "query_url": f"{base}/query",
            "update_url": f"{base}/update",
            "location": str(location),
            "token_file": str(token_file),
        }
        return LaunchPlan(argv, base, {"http": port}, extra)

    def healthy(self, record: ServiceRecord) -> bool:
        query_url = record.extra.get("query_url", record.address + "/query")
        return sparql_answers(query_url, record.extra.get("token_file"))

    def startup_hint(self, record: ServiceRecord) -> str:
        """What to do when the server exits while starting (the usual cause is the lock)."""
        location = record.extra.get("location", "the graph directory")
        return (
            f"see its log: {record.log}; if it says LOCK, another process holds {location} "
            "open (a semspec command or worker started while the stack was down): stop it, "
            "then run `semspec up` again"
        )

    def check_external(self, config: SemspecConfig) -> bool:
        return sparql_answers(config.graph.query_url or "", config.graph.token_file)

    def version(self) -> str:
        return f"semspec graph server (pyoxigraph {pyoxigraph.__version__})"
