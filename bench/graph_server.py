"""The stack's graph server (``semspec.graph.http_server``, token checked on every request)
against ``oxigraph serve`` (the server ``semspec up`` started before, no auth) on the same
workload, through the same client (``EndpointStore``):

- load: ``GRAPHS`` sources replaced one update each (``TRIPLES`` triples per source);
- small: a SELECT with a bound path, as the assembler and the activities make, ``SMALL`` times;
- rows: a SELECT over every triple of ``ROWS_GRAPHS`` sources (``ROWS_GRAPHS * TRIPLES`` rows);
- beside a slow query: the small SELECT from another connection while a slow query runs.

``oxigraph serve`` comes from the ``oxigraph`` package (a dev dependency); without it only the
new server is measured. Run: ``python bench/graph_server.py`` (``--quick``: 20 sources, what a
test runs). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rdflib import Literal, URIRef

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from semspec.core.errors import ServiceError
from semspec.graph.access import sparql_store
from semspec.graph.server_token import ensure_token
from semspec.graph.store import GraphStore, Triple
from semspec.services.graph_server import sparql_answers
from semspec.services.ports import free_port
from semspec.services.specs import binary

GRAPHS = 300
TRIPLES = 40
SMALL = 400
ROWS_GRAPHS = 50
ROWS_RUNS = 30
BESIDE = 100
PATH = URIRef("urn:bench:path")
SMALL_QUERY = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?path ?o } } LIMIT 5"
ROWS_QUERY = "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
# A cross product over every triple: seconds of work for the store, a few rows of answer.
SLOW_QUERY = """SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?a { ?s ?p ?o } GRAPH ?b { ?t ?q ?v }
FILTER(STR(?o) < STR(?v)) }"""


def source(n: int) -> list[Triple]:
    subject = URIRef(f"urn:bench:s{n}")
    return [
        (subject, PATH if i == 0 else URIRef(f"urn:bench:p{i}"), Literal(f"v{n}-{i}"))
        for i in range(TRIPLES)
    ]


@contextmanager
def serving(argv: list[str], query_url: str, token_file: str | None, log: Path) -> Iterator[None]:
    """Run ``argv`` (a server this bench owns) until the block ends; stop it by its PID."""
    with log.open("ab") as out:
        server = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not sparql_answers(query_url, token_file):
            assert server.poll() is None and time.monotonic() < deadline, f"see {log}"
            time.sleep(0.05)
        yield
    finally:
        server.terminate()
        server.wait(timeout=30)


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def workload(store: GraphStore, side: GraphStore) -> dict[str, float]:
    """The four measurements on an empty store; ``side`` is a second connection."""
    started = time.perf_counter()
    for n in range(GRAPHS):
        store.replace_graph(f"urn:bench:g{n}", source(n))
    load_s = time.perf_counter() - started
    small = median_ms(lambda: store.select(SMALL_QUERY, {"path": PATH}), SMALL)
    for n in range(ROWS_GRAPHS, GRAPHS):
        store.drop_graph(f"urn:bench:g{n}")
    rows = median_ms(lambda: store.select(ROWS_QUERY), ROWS_RUNS)
    slow = threading.Thread(target=lambda: side.select(SLOW_QUERY))
    slow.start()
    beside = median_ms(lambda: store.select(SMALL_QUERY, {"path": PATH}), BESIDE)
    slow_running = slow.is_alive()
    slow.join()
    return {
        "load_s": round(load_s, 3),
        "small_ms": round(small, 3),
        "rows_ms": round(rows, 3),
        "beside_slow_ms": round(beside, 3),
        "slow_still_running": float(slow_running),
    }


def measure(query_url: str, update_url: str, token_file: str | None) -> dict[str, float]:
    store = sparql_store(query_url, update_url, token_file=token_file)
    side = sparql_store(query_url, update_url, timeout_s=300, token_file=token_file)
    try:
        return workload(store, side)
    finally:
        store.close()
        side.close()


def ours(tmp: Path) -> dict[str, float]:
    port = free_port()
    token_file = str(ensure_token(tmp / "run"))
    argv = [sys.executable, "-m", "semspec.graph.http_server", "--location", str(tmp / "ours")]
    argv += ["--port", str(port), "--token-file", token_file]
    base = f"http://127.0.0.1:{port}"
    with serving(argv, f"{base}/query", token_file, tmp / "ours.log"):
        return measure(f"{base}/query", f"{base}/update", token_file)


def baseline(tmp: Path) -> dict[str, float] | None:
    try:
        oxigraph = binary("oxigraph")
    except ServiceError:
        return None
    port = free_port()
    argv = [oxigraph, "serve", "--location", str(tmp / "baseline")]
    argv += ["--bind", f"127.0.0.1:{port}", "--union-default-graph"]
    base = f"http://127.0.0.1:{port}"
    with serving(argv, f"{base}/query", None, tmp / "baseline.log"):
        return measure(f"{base}/query", f"{base}/update", None)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        new = ours(Path(tmp))
        old = baseline(Path(tmp))
    print(f"workload: {GRAPHS} sources x {TRIPLES} triples; {ROWS_GRAPHS * TRIPLES} rows")
    print(f"{'':24}{'semspec server':>16}{'oxigraph serve':>16}{'ratio':>8}")
    for key, value in new.items():
        if key == "slow_still_running":
            continue
        before = old[key] if old else None
        ratio = f"{value / before:.2f}" if before else "-"
        print(f"{key:24}{value:>16}{before if before is not None else '-':>16}{ratio:>8}")
    result = {
        "workload": {"graphs": GRAPHS, "triples_per_graph": TRIPLES, "rows": ROWS_GRAPHS * TRIPLES},
        "semspec_server": new,
        "oxigraph_serve": old,
        "ratio": {
            k: round(v / old[k], 2)
            for k, v in new.items()
            if old and old[k] and k != "slow_still_running"
        },
    }
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 sources, a few runs each")
    if parser.parse_args().quick:
        GRAPHS, TRIPLES, SMALL, ROWS_GRAPHS, ROWS_RUNS, BESIDE = 20, 20, 10, 10, 3, 5
    main()
