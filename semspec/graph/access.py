"""Which graph store a process of a repository opens: the one rule every process follows.

| config / stack | what a process opens |
|---|---|
| ``graph.mode: sparql`` | the configured endpoint (a cluster, any external server) |
| embedded, the stack's graph server runs | that server's endpoint, recorded in ``services.json`` |
| embedded, no graph server recorded or its process gone | the Oxigraph files under ``graph.path`` |

The store directory can be opened by one process only, so while ``semspec up``'s server holds it
every worker, the monitor and CLI commands (``sources sync``, ``index`` ...) go through the
server, sending the token of the file ``up`` recorded (an external endpoint gets the one of
``graph.token_file``). The lookup is made at every opening: a server restarted by ``up`` on
another port is found, and once ``down`` stopped it, commands open the files again.
"""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import GraphConfig, SemspecConfig
from semspec.core.run_folder import is_ours, load_records, run_dir_of
from semspec.graph.server_token import read_token
from semspec.graph.sparql_endpoint import EndpointStore
from semspec.graph.store import GraphStore, embedded_store

GRAPH_SERVICE = "graph"


def sparql_store(
    query_url: str, update_url: str, timeout_s: float = 30.0, token_file: str | None = None
) -> GraphStore:
    """A store that sends every query and update to a SPARQL 1.1 endpoint, with the token
    ``token_file`` holds (none when None)."""
    token = read_token(Path(token_file).expanduser()) if token_file else None
    return EndpointStore(query_url, update_url, timeout_s, token)


def open_store(config: GraphConfig, repo: Path) -> GraphStore:
    """The store the config names: Oxigraph files under ``repo`` or a SPARQL endpoint.

    Processes of a running stack use ``open_graph`` instead, which sends them to the stack's
    graph server while it runs.
    """
    if config.mode == "sparql":
        assert config.query_url and config.update_url  # the config model enforces both
        return sparql_store(
            config.query_url, config.update_url, config.timeout_s, config.token_file
        )
    return embedded_store(repo / config.path)


def graph_config(config: SemspecConfig, repo: Path) -> GraphConfig:
    """The graph this process must use: see the module's table."""
    graph = config.graph
    if graph.mode == "sparql":
        return graph
    record = load_records(run_dir_of(config, repo)).get(GRAPH_SERVICE)
    if record is None or not is_ours(record.pid, record.argv):
        return graph
    query_url, update_url = record.extra.get("query_url"), record.extra.get("update_url")
    location, token_file = record.extra.get("location"), record.extra.get("token_file")
    # A server over another directory (the config changed since `up`) is not this graph.
    if not query_url or not update_url or not location:
        return graph
    if Path(location).resolve() != graph_location(config, repo).resolve():
        return graph
    served = {"query_url": query_url, "update_url": update_url, "token_file": token_file}
    return graph.model_copy(update={"mode": "sparql", **served})


def graph_location(config: SemspecConfig, repo: Path) -> Path:
    """Absolute directory of the embedded graph store."""
    path = Path(config.graph.path)
    return path if path.is_absolute() else repo / path


def open_graph(config: SemspecConfig, repo: Path) -> GraphStore:
    """Open the repository's graph store the way every process of its stack shares it."""
    return open_store(graph_config(config, repo), repo)
