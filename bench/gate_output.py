"""Gate output capture: bounded streaming (``run_gate``) against reading everything into memory.

Both sides run the same flooding command in this process; printed are time and peak Python
memory of each side and their ratios. The last line is one JSON object with the figures.

The floods are one line of ``x`` (10 and 50 MB: the figures ``time_ratio`` is held to) and
10 MB of ``pytest -v`` lines (``10mb_lines``: every line holds ``_`` and capitals, so masking
scans each one for a credential's beginning; reported, not held to the same bound).
``--quick`` (1 MB floods, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from resource import RUSAGE_CHILDREN

from semspec.workflow.gates import GateSpec, run_gate

SIZES_MB = [10, 50]
LINES_MB = 10
MAX_OUTPUT = 16_384
ROUNDS = 3


LINE = "tests/test_gates.py::test_gate_that_exits_zero_passes_with_its_output PASSED [ 12%]"


def flood(size_mb: int) -> str:
    return f"head -c {size_mb * 1024 * 1024} /dev/zero | tr '\\0' x"


def flood_lines(size_mb: int) -> str:
    return f"yes '{LINE}' | head -c {size_mb * 1024 * 1024}"


async def baseline(command: str, cwd: Path) -> int:
    """What a naive runner does: communicate() and keep the whole output."""
    process = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, cwd=cwd, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return len(out)


async def bounded(command: str, cwd: Path) -> int:
    result = await run_gate(GateSpec("flood", command), cwd, cwd / "logs", MAX_OUTPUT)
    return len(result.output)


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (the gate's processes,
    the launcher included), user and system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def measure(run: Callable[[], Awaitable[int]]) -> tuple[float, float, int]:
    """Best wall time over ROUNDS (seconds), mean CPU time of a run (seconds: on a loaded
    machine wall time follows CPU time, which the load does not change) and peak traced memory
    (bytes) of one run."""
    best = float("inf")
    cpu_start = cpu_seconds()
    for _ in range(ROUNDS):
        start = time.perf_counter()
        await run()
        best = min(best, time.perf_counter() - start)
    cpu = (cpu_seconds() - cpu_start) / ROUNDS
    tracemalloc.start()
    try:
        await run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return best, cpu, peak


async def main() -> dict[str, object]:
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        runs = [(f"{size}mb", flood(size)) for size in SIZES_MB]
        for name, command in [*runs, (f"{LINES_MB}mb_lines", flood_lines(LINES_MB))]:
            base_s, base_cpu, base_peak = await measure(partial(baseline, command, cwd))
            ours_s, ours_cpu, ours_peak = await measure(partial(bounded, command, cwd))
            time_ratio = ours_s / base_s
            memory_ratio = ours_peak / base_peak
            print(
                f"{name:>10}  baseline {base_s * 1000:7.1f} ms {base_peak / 2**20:7.2f} MiB | "
                f"bounded {ours_s * 1000:7.1f} ms {ours_peak / 2**20:6.2f} MiB | "
                f"time x{time_ratio:.2f}  cpu x{ours_cpu / base_cpu:.2f}  "
                f"memory x{memory_ratio:.4f}"
            )
            figures[name] = {
                "baseline_ms": round(base_s * 1000, 1),
                "bounded_ms": round(ours_s * 1000, 1),
                "time_ratio": round(time_ratio, 3),
                "baseline_cpu_ms": round(base_cpu * 1000, 1),
                "bounded_cpu_ms": round(ours_cpu * 1000, 1),
                "cpu_ratio": round(ours_cpu / base_cpu, 3),
                "baseline_peak_bytes": base_peak,
                "bounded_peak_bytes": ours_peak,
                "memory_ratio": round(memory_ratio, 5),
            }
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB floods, one round")
    if parser.parse_args().quick:
        SIZES_MB, LINES_MB, ROUNDS = [1], 1, 1
    print(json.dumps({"bench": "gate_output", "results": asyncio.run(main())}))
