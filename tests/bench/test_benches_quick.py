"""Every benchmark in ``bench/`` runs in its quick mode (tiny sizes) and ends with one JSON
object, so a bench that no longer runs (a changed signature, a moved module) fails here rather
than when someone next measures. Timings are not judged."""

from __future__ import annotations

import pytest

from tests.support.benches import BENCH, quick_report

COVERED = {
    "event_lag": "tests/bench/test_event_lag_bench.py runs it and reads its figures",
    "lists": "tests/bench/test_lists_bench.py runs it and reads its figures",
}
"""Benches whose quick mode another test runs already."""
SERVERS = {
    "assembler": "the stack's graph server",
    "cli_latency": "semspec up",
    "graph_server": "the graph server and oxigraph serve",
    "loop_overhead": "a Temporal dev server and NATS",
    "monitor_throughput": "NATS, one node and a 3-node cluster",
    "stack_startup": "semspec up",
    "start_guard": "a Temporal dev server",
    "step_monitor": "NATS",
    "step_publish": "NATS",
    "time_to_stop": "semspec up, twice",
    "ui": "semspec up and chromium",
}
"""Benches that start servers of their own: marked ``stack`` (``ui`` also ``browser``)."""


def benches() -> list[str]:
    """The benchmarks: every script of ``bench/`` but its ``_`` helper modules."""
    return sorted(p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def marks(name: str) -> list[pytest.MarkDecorator]:
    found = [pytest.mark.slow]
    if name in SERVERS:
        found.append(pytest.mark.stack)
    if name == "ui":
        found.append(pytest.mark.browser)
    return found


def test_every_bench_has_a_quick_mode() -> None:
    missing = [name for name in benches() if "--quick" not in (BENCH / f"{name}.py").read_text()]
    assert missing == []


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=marks(n)) for n in benches() if n not in COVERED]
)
def test_the_bench_runs_in_quick_mode_and_prints_one_json_object_last(name: str) -> None:
    quick_report(name)
