"""What the fence's launcher costs a gate: bubblewrap run directly (as gates started before
``fence_launch.py``) against the launcher with no limits, with ``gates.limits``' defaults, and
with a network through slirp4netns (plain, and with one loopback address let in).

Each side starts ``/bin/sh -c true`` ``ROUNDS`` times in a fresh folder; printed are the median
times and their ratio to the direct run. The last line is one JSON object with the figures.
Needs bubblewrap and slirp4netns. ``--quick`` (2 runs each, what a test runs) only checks that
the bench still runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from semspec.core.config.models import GateLimits
from semspec.core.sandbox import ChildLimits, Fence, bwrap_argv, choose_sandbox

ROUNDS = 20
COMMAND = ["/bin/sh", "-c", "true"]


def median_ms(argv: list[str], cwd: Path) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 1)


def main() -> dict[str, object]:
    sandbox = choose_sandbox("bwrap")
    assert sandbox.bwrap is not None and sandbox.slirp4netns is not None
    limits = ChildLimits.of(GateLimits())
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        plain, network = Fence(cwd), Fence(cwd, network=True)
        model = Fence(cwd, network=True, reachable=(("127.0.0.1", 9999),))
        runs = {
            "bwrap_direct": bwrap_argv(sandbox.bwrap, plain, COMMAND, cwd),
            "launcher": sandbox.argv(COMMAND, plain, cwd),
            "launcher_limits": sandbox.argv(COMMAND, plain, cwd, limits),
            "launcher_network": sandbox.argv(COMMAND, network, cwd, limits),
            "launcher_network_model": sandbox.argv(COMMAND, model, cwd, limits),
        }
        figures: dict[str, object] = {name: median_ms(argv, cwd) for name, argv in runs.items()}
    base = float(str(figures["bwrap_direct"]))
    for name in list(runs):
        value = float(str(figures[name]))
        print(f"{name:<24} {value:7.1f} ms  x{value / base:.2f}")
        figures[f"{name}_ratio"] = round(value / base, 2)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 runs of each side")
    if parser.parse_args().quick:
        ROUNDS = 2
    print(json.dumps(main()))
