"""Reviewer context assembly at two scales: 2,000 SOPs (~20,000 chunks) and 500 indexed files,
then 20,000 SOPs (~200,000 chunks) and 5,000 files, for the same 4-file task.

Small scale: median latency on the Oxigraph store files, then through the Oxigraph server that
``semspec up`` starts over the same files (the SPARQL endpoint every process of a stack uses),
against the same queries on rdflib's in-memory store (the baseline).

Large scale, on the Oxigraph store files, two ways: ``large`` scales every kind of SOP tenfold
(one in 200 applies to every ``*.py`` file, so the task matches ~4x as many SOPs and its context
grows with them); ``same matches`` adds 18,000 SOPs that apply only to the new modules, so the
task matches exactly as many SOPs as at the small scale and any growth is the store's size.
Each store is compacted after its build (``settle``), as a long-running graph is.

Run: ``python bench/assembler.py`` (``--quick``: 100 SOPs, what a test runs). The last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph
from rdflib import Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from semspec.core.config.models import GraphConfig, SemspecConfig
from semspec.core.run_folder import ServiceRecord
from semspec.graph.access import open_store
from semspec.graph.store import GraphStore, Triple, memory_store
from semspec.knowledge.sources.sop_document import SopDocument
from semspec.knowledge.sources.sop_markdown import Chunk
from semspec.knowledge.sources.sop_triples import sop_triples
from semspec.services.graph_server import GraphSpec
from semspec.vocabulary import code as C
from semspec.vocabulary.namespaces import RDF, sop_graph
from semspec.workflow.context.assembler import AssemblyRequest, assemble_review_context

SOPS = 2_000
CHUNKS = 10
MODULES = 200
FILES = 500
SCALE = 10
TASK = ("src/mod_3/file_3.py", "src/mod_17/file_17.py", "src/mod_42/file_42.py", "README.md")
RUNS = 21
MEMORY_RUNS = 3  # rdflib evaluates SPARQL in Python: a few runs give a stable median
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Scale:
    """How many SOPs, modules and files; SOPs from ``wide_below`` on apply to one module only."""

    sops: int
    modules: int
    files: int
    wide_below: int


SMALL = Scale(SOPS, MODULES, FILES, SOPS)
LARGE = Scale(SOPS * SCALE, MODULES * SCALE, FILES * SCALE, SOPS * SCALE)
SAME_MATCHES = Scale(SOPS * SCALE, MODULES * SCALE, FILES * SCALE, SOPS)


def sop(i: int, scale: Scale) -> SopDocument:
    globs = [f"src/mod_{i % scale.modules}/*.py"]
    if i % 200 == 0 and i < scale.wide_below:
        globs.append("*.py")
    if i % 500 == 1 and i < scale.wide_below:
        globs.append("README*")
    chunks = tuple(
        Chunk(
            f"Part {c}",
            f"## Part {c}\n\nRule {i}.{c}: keep module {i % scale.modules} handlers small, "
            "name every failure, and log the identifiers a reader needs to find the record.",
        )
        for c in range(CHUNKS)
    )
    return SopDocument(
        sop_id=f"sop-{i:05d}",
        path=f".semspec/sources/docs/sops/sop-{i:05d}.md",
        source_hash=f"{i:064x}",
        title=f"Practice {i}",
        category="sop",
        applies_to=tuple(globs),
        severity=SEVERITIES[i % 3],
        summary=f"Practice {i} keeps module {i % scale.modules} predictable.",
        requirements=(f"Do {i} first", f"Check {i} twice"),
        chunks=chunks,
    )


def file_triples(n: int, modules: int = MODULES) -> list[Triple]:
    path = f"src/mod_{n % modules}/file_{n}.py"
    node = C.file_iri(path)
    triples: list[Triple] = [
        (node, RDF.type, C.FILE),
        (node, C.PATH, Literal(path)),
        (node, C.LANGUAGE, Literal("python")),
    ]
    for s in range(5):
        sym = C.fact_iri(path, f"sym:f{s}")
        ev = C.fact_iri(path, f"ev:f{s}")
        triples += [
            (node, C.DEFINES, sym),
            (sym, C.SIGNATURE, Literal(f"def f{s}(a: int, b: str) -> bool")),
            (sym, C.EVIDENCE, ev),
            (ev, C.START_LINE, Literal(1 + s * 10)),
        ]
    return triples


def build(store: GraphStore, scale: Scale) -> float:
    started = time.perf_counter()
    for i in range(scale.sops):
        store.replace_graph(sop_graph(f"sop-{i:05d}"), sop_triples(sop(i, scale)))
    for n in range(scale.files):
        path = f"src/mod_{n % scale.modules}/file_{n}.py"
        store.replace_graph(C.code_graph(path), file_triples(n, scale.modules))
    return time.perf_counter() - started


def measure(store: GraphStore, runs: int, *, warm: bool = True) -> tuple[float, str]:
    request = AssemblyRequest(task_files=TASK, window_tokens=128_000, diff="+ changed line\n" * 200)
    # Warm the token-count cache; the in-memory run reuses it (same texts), so it skips this.
    text = assemble_review_context(store, request).text if warm else ""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = assemble_review_context(store, request)
        times.append((time.perf_counter() - started) * 1000)
        assert not text or result.text == text
        text = result.text
    return statistics.median(times), text


def settle(repo: Path) -> None:
    """Compact the store files the build wrote, as a long-running graph's are by the time a
    reviewer reads them: reopened straight after 200,000 writes, reads take twice as long."""
    files = pyoxigraph.Store(str(repo / GraphConfig().path))
    files.optimize()
    del files  # pyoxigraph releases the files with its last reference


def measure_scale(scale: Scale, name: str) -> tuple[float, int, int]:
    """Build ``scale`` into fresh Oxigraph store files; median ms, matched SOPs, context chars."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(GraphConfig(), Path(tmp))
        try:
            built = build(store, scale)
        finally:
            store.close()
        settle(Path(tmp))
        store = open_store(GraphConfig(), Path(tmp))
        try:
            ms, text = measure(store, RUNS)
        finally:
            store.close()
    matched = text.count("### SOP ")
    print(
        f"{name}: {scale.sops} SOPs x {CHUNKS} chunks + {scale.files} files built in "
        f"{built:.1f} s; median {ms:.1f} ms; matched SOPs {matched}, context {len(text)} chars",
        flush=True,
    )
    return ms, matched, len(text)


@contextmanager
def served(repo: Path) -> Iterator[GraphConfig]:
    """The graph server ``semspec up`` would start over ``repo``'s graph, as a sparql config."""
    spec = GraphSpec()
    launch = spec.plan(SemspecConfig(), repo, repo / "run", set())
    record = ServiceRecord("graph", 0, launch.argv, launch.address, launch.ports, launch.extra)
    with (repo / "graph.log").open("ab") as log:
        server = subprocess.Popen(launch.argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not spec.healthy(record):
            assert server.poll() is None and time.monotonic() < deadline, "graph server failed"
            time.sleep(0.05)
        yield GraphConfig(
            mode="sparql",
            query_url=launch.extra["query_url"],
            update_url=launch.extra["update_url"],
            token_file=launch.extra["token_file"],
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ox = open_store(GraphConfig(), Path(tmp))
        mem = memory_store()
        try:
            ox_build = build(ox, SMALL)
            print(f"built oxigraph graph in {ox_build:.1f} s", flush=True)
            ox.close()
            settle(Path(tmp))
            ox = open_store(GraphConfig(), Path(tmp))
            ox_ms, ox_text = measure(ox, RUNS)
            print(f"oxigraph median {ox_ms:.1f} ms", flush=True)
            # The server takes the directory over, as `semspec up` does.
            ox.close()
            with served(Path(tmp)) as config:
                endpoint = open_store(config, Path(tmp))
                try:
                    ep_ms, ep_text = measure(endpoint, RUNS)
                finally:
                    endpoint.close()
            print(f"oxigraph server (SPARQL endpoint) median {ep_ms:.1f} ms", flush=True)
            mem_build = build(mem, SMALL)
            print(f"built rdflib memory graph in {mem_build:.1f} s", flush=True)
            mem_ms, mem_text = measure(mem, MEMORY_RUNS, warm=False)
        finally:
            ox.close()
            mem.close()
    assert ox_text == mem_text == ep_text, "every store must assemble the same text"
    ratio = mem_ms / ox_ms
    matched = ox_text.count("### SOP ")
    print(f"graph: {SOPS} SOPs x {CHUNKS} chunks + {FILES} files; task: {len(TASK)} files")
    print(f"build: oxigraph {ox_build:.1f} s, rdflib memory {mem_build:.1f} s")
    print(f"matched SOPs: {matched}, context text {len(ox_text)} chars")
    print(
        f"median: oxigraph {ox_ms:.1f} ms ({RUNS} runs), endpoint {ep_ms:.1f} ms ({RUNS} runs), "
        f"rdflib memory {mem_ms:.1f} ms ({MEMORY_RUNS} runs)"
    )
    print(f"ratio (memory / oxigraph): {ratio:.1f}x")
    print(f"endpoint / files: {ep_ms / ox_ms:.2f}x (target: endpoint median under 50 ms)")
    # Both scales again, built and timed the same way one after the other, for the growth.
    small_ms, _, small_chars = measure_scale(SMALL, "small")
    large_ms, large_matched, large_chars = measure_scale(LARGE, "large")
    same_ms, same_matched, _ = measure_scale(SAME_MATCHES, "large, same matches")
    print(
        f"growth {SOPS} -> {LARGE.sops} SOPs: {large_ms / small_ms:.2f}x with {matched} -> "
        f"{large_matched} matched SOPs ({small_chars} -> {large_chars} chars of context); "
        f"{same_ms / small_ms:.2f}x with {same_matched} matched "
        "(target: large median under 50 ms)"
    )
    print(
        json.dumps(
            {
                "median_ms": round(ox_ms, 2),
                "endpoint_median_ms": round(ep_ms, 2),
                "endpoint_ratio": round(ep_ms / ox_ms, 2),
                "memory_median_ms": round(mem_ms, 2),
                "ratio": round(ratio, 2),
                "median_ms_small": round(small_ms, 2),
                "median_ms_large": round(large_ms, 2),
                "growth": round(large_ms / small_ms, 2),
                "matched_small": matched,
                "matched_large": large_matched,
                "median_ms_large_same_matches": round(same_ms, 2),
                "growth_same_matches": round(same_ms / small_ms, 2),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 SOPs and 60 files, 2 runs")
    if parser.parse_args().quick:
        # Modules and files enough that every file of TASK is in the graph.
        SOPS, MODULES, FILES, SCALE, RUNS, MEMORY_RUNS = 100, 50, 60, 2, 2, 1
        SMALL = Scale(SOPS, MODULES, FILES, SOPS)
        LARGE = Scale(SOPS * SCALE, MODULES * SCALE, FILES * SCALE, SOPS * SCALE)
        SAME_MATCHES = Scale(SOPS * SCALE, MODULES * SCALE, FILES * SCALE, SOPS)
    main()
