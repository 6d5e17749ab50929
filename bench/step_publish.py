"""What publishing a step costs the agent that takes it.

Starts its own nats-server on a free loopback port (stopped by PID at the end) and runs, side
by side and alternating, ``ROUNDS`` simulated turns of ``STEPS`` steps each. A step is a model
call stood in for by ``STEP_S`` of waiting (the agent awaits its provider), then the hand-over
of its record to the observer:

- ``observer``: the task loop's ``TurnObserver`` over the worker's ``EventPublisher``, so every
  step is validated and published to JetStream by the background task on the same event loop;
- ``baseline``: ``NoObserver``, which forgets the step.

Reported: ``step_call_ms`` / ``baseline_call_ms``, the median time of the ``observer.step()``
call itself; ``step_ms`` / ``baseline_step_ms``, the median wall time of a whole step (waiting
included, so the publishing task's share of the loop shows); ``publish_overhead_ms``, what the
observer adds to a step's median (target < 1); and ``published`` / ``dropped`` over all rounds.

``measure_publish_overhead()`` returns ``publish_overhead_ms`` for ``bench/step_monitor.py``;
``publish_overhead_report()`` returns every number. The last line printed is one JSON object.
``--quick`` (one turn of 20 steps, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.monitor_throughput import start_server, stop_server
from semspec.agents.steps import NoObserver, StepObserver, StepRecord
from semspec.core.logging import configure_logging
from semspec.workflow.task.messages import EventContext
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.step_events import TurnObserver

STEPS = 500
ROUNDS = 4
STEP_S = 0.002
"""A stand-in for the model call between two hand-overs (real ones take 0.5 s to a minute)."""


def record(n: int) -> StepRecord:
    """A model step as the LLM developer reports it."""
    return StepRecord(
        role="developer",
        step=n,
        kind="model",
        action_hash="9f2c0a11d3e4b5a6",
        observation_hash="0123456789abcdef",
        model="bench-model",
        input_tokens=1_200,
        output_tokens=80,
        cached_tokens=1_000,
        cost_usd=0.0012,
        duration_ms=STEP_S * 1000,
    )


async def turn(observer: StepObserver) -> tuple[list[float], list[float]]:
    """One simulated turn: ms of each ``step()`` call and of each whole step."""
    calls: list[float] = []
    steps: list[float] = []
    for n in range(1, STEPS + 1):
        started = time.perf_counter()
        await asyncio.sleep(STEP_S)
        observer.stop_requested()
        before = time.perf_counter()
        observer.step(record(n))
        after = time.perf_counter()
        calls.append((after - before) * 1000)
        steps.append((after - started) * 1000)
    return calls, steps


async def _measure(url: str) -> dict[str, Any]:
    publisher = EventPublisher(url)
    ours: tuple[list[float], list[float]] = ([], [])
    base: tuple[list[float], list[float]] = ([], [])
    published = dropped = 0
    try:
        for n in range(ROUNDS):
            ctx = EventContext("bench", None, f"task-bench-{n}", "run", 1)
            observer = TurnObserver(publisher, ctx, "developer", f"a{n}", drain_s=30.0)
            async with observer:
                calls, steps = await turn(observer)
            ours[0].extend(calls)
            ours[1].extend(steps)
            dropped += observer.dropped
            published += STEPS - observer.dropped
            calls, steps = await turn(NoObserver())
            base[0].extend(calls)
            base[1].extend(steps)
    finally:
        await publisher.close()
    step_ms, baseline_step_ms = statistics.median(ours[1]), statistics.median(base[1])
    return {
        "publish_overhead_ms": round(max(0.0, step_ms - baseline_step_ms), 4),
        "step_call_ms": round(statistics.median(ours[0]), 4),
        "baseline_call_ms": round(statistics.median(base[0]), 4),
        "step_ms": round(step_ms, 4),
        "baseline_step_ms": round(baseline_step_ms, 4),
        "step_call_p99_ms": round(statistics.quantiles(ours[0], n=100)[98], 4),
        "published": published,
        "dropped": dropped,
        "steps": STEPS * ROUNDS,
    }


def _in_thread(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``work`` in a thread of its own, so a caller already inside an event loop (the step
    monitor bench) can call this module's functions too."""
    result: dict[str, Any] = {}
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.update(work())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="step-publish-bench")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result


def publish_overhead_report() -> dict[str, Any]:
    """Every number of the bench (see the module docstring), on a nats-server of its own."""

    def work() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="semspec-step-publish-") as tmp:
            proc, url = start_server(Path(tmp) / "nats")
            try:
                return asyncio.run(_measure(url))
            finally:
                stop_server(proc)

    return _in_thread(work)


def measure_publish_overhead() -> float:
    """The median ms publishing adds to one step (``publish_overhead_ms``; target < 1)."""
    return float(publish_overhead_report()["publish_overhead_ms"])


def main() -> dict[str, Any]:
    configure_logging("json", "ERROR")
    report = publish_overhead_report()
    print(
        f"observer.step() call: {report['step_call_ms']:.4f} ms median "
        f"(p99 {report['step_call_p99_ms']:.4f}); NoObserver: {report['baseline_call_ms']:.4f} ms"
    )
    print(
        f"whole step ({STEP_S * 1000:g} ms wait): {report['step_ms']:.3f} ms with publishing, "
        f"{report['baseline_step_ms']:.3f} ms without; overhead "
        f"{report['publish_overhead_ms']:.4f} ms"
    )
    print(
        f"published {report['published']} of {report['steps']} steps, dropped {report['dropped']}"
    )
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one turn of 20 steps")
    if parser.parse_args().quick:
        STEPS, ROUNDS = 20, 1
    print(json.dumps(main()))
