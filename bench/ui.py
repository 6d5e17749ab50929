"""The console in a real browser: how soon a risk signal shows on the open board, and how fast
the page of a task with 50 iterations loads.

One embedded stack (``semspec up``: NATS, the Temporal dev server, the worker, the risk monitor
and the console) in a sample repository. Two real tasks run first, both played by the scripted
agents: a short one (approved in its first iteration) and a long one of ``ITERATIONS``
iterations, whose developer fails the gate on odd iterations and whose reviewer asks for changes
on even ones, until the last is approved (the risk rules that would stop such a loop are off).
Then Debian's chromium (Playwright, ``tests/support/browser.py``) opens the console:

- **signals**: with the board open, ``SIGNALS`` risk signals about the long task are published
  to NATS as the monitor publishes them (the signal stream's intake, ``Nats-Msg-Id`` = signal
  id), one every ``PACE_S``. Each carries its publish time (wall clock, ms) in its reason, which
  the board's row shows; a ``MutationObserver`` in the page reads it when the row changes and
  takes ``performance.timeOrigin + performance.now()`` (same machine, same clock). Reported:
  ``signal_p50_ms`` and ``signal_p99_ms`` (target p99 < 250).
- **pages**: the long task's page, the short task's page and the board, loaded in turn
  ``LOADS`` times each, timed by the browser's Navigation Timing (``loadEventEnd``: the HTML,
  the console's CSS and script, and the page laid out). ``task_page_ms`` is the long task's
  median (target < 300); ``short_task_page_ms`` and ``board_load_ms`` are the baselines (a
  board that reloaded to show a signal would take at least ``board_load_ms``); ``page_ratio``
  is the long task's page over the short one's.

Run: ``python bench/ui.py`` (``--quick``: 3 iterations, 10 signals, what a test runs). Other work
on the machine shows in the timings; the load average is printed. The last line is one JSON
object with ``signal_p50_ms``, ``signal_p99_ms``, ``task_page_ms`` and the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import nats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.signal_evidence import ConflictEvidence
from semspec.vocabulary.subjects import signal_intake_subject
from tests.support.browser import chromium, opened
from tests.support.stack import Stack, check_gate, running_stack, sample_config

ITERATIONS = 50
SIGNALS = 200
PACE_S = 0.05
"""Between two signals: each is timed on its own, not as part of a burst."""
LOADS = 15
TASK_WAIT_S = 900.0

# Not the sample repository's calc.py: a turn that changes nothing escalates (no_change).
GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
REVIEW = {"reviewer": {"verdict": "approve", "summary": "meets the criteria"}}
STEP_RULES = ("repeated_action", "repeated_failure", "no_tool_call", "alternating_actions")
OFF = {"enabled": False}

WATCH = """(taskId) => {
    window.signalSeen = {};
    const cell = document.querySelector(`#task-${CSS.escape(taskId)} [data-field="signal"]`);
    new MutationObserver(() => {
        const now = performance.timeOrigin + performance.now();
        const found = /bench-(\\d+)-(\\d+(?:\\.\\d+)?)/.exec(cell.textContent);
        if (found && !(found[1] in window.signalSeen)) {
            window.signalSeen[found[1]] = now - Number(found[2]);
        }
    }).observe(cell, {childList: true, characterData: true, subtree: true});
    return cell !== null;
}"""
NAVIGATION = """() => {
    const nav = performance.getEntriesByType("navigation")[0];
    return {load: nav.loadEventEnd - nav.startTime, html: nav.responseEnd - nav.startTime};
}"""


def long_script() -> list[dict[str, Any]]:
    """``ITERATIONS`` iterations: a failing gate, then a review asking for changes, in turn;
    the last one approved. Every attempt writes different text."""
    script: list[dict[str, Any]] = []
    for n in range(1, ITERATIONS):
        if n % 2:
            broken = f"def add(a, b):\n    return a - b  # attempt {n}\n"
            script.append({"developer": {"write": {"calc.py": broken}}})
        else:
            finding = {"message": f"name the arguments (round {n})", "severity": "warning"}
            review = {"verdict": "request_changes", "summary": "not yet", "findings": [finding]}
            written = f"{GOOD}# attempt {n}\n"
            script.append({"developer": {"write": {"calc.py": written}}, "reviewer": review})
    script.append({"developer": {"write": {"calc.py": GOOD}}, **REVIEW})
    return script


def run_task(stack: Stack, task_id: str, script: list[dict[str, Any]]) -> dict[str, Any]:
    """Submit a scripted task on calc.py and wait until it is approved."""
    done = stack.submit_scripted(task_id, script, criterion="add(a, b) returns a + b")
    assert done.returncode == 0, done.stderr
    status = stack.wait_status(task_id, lambda s: bool(s["outcome"]), TASK_WAIT_S)
    assert status["outcome"] == "approved", json.dumps(status)[-2000:]
    return status


def console_url(stack: Stack) -> str:
    """The URL ``semspec status`` prints for the console (it carries the secret)."""
    services = stack.cli_json("status")
    url: str = next(s for s in services if s["name"] == "console")["extra"]["url"]
    return url


def bench_signal(task_id: str, n: int) -> UserSignal:
    """A warn signal about ``task_id`` whose reason carries its publish time (epoch ms)."""
    return UserSignal(
        signal_id=f"bench-{uuid.uuid4().hex}",
        task_id=task_id,
        level="warn",
        reason=f"bench-{n}-{time.time() * 1000:.3f}",
        evidence=ConflictEvidence(event_id=f"bench-{n}", files=["calc.py"], other_tasks=["x"]),
        message="a signal of bench/ui.py",
    )


async def publish_signals(nats_url: str, task_id: str) -> None:
    """``SIGNALS`` signals to the signal stream's intake, as the risk monitor publishes them."""
    nc = await nats.connect(nats_url, connect_timeout=5)
    try:
        js = nc.jetstream()
        for n in range(SIGNALS):
            signal = bench_signal(task_id, n)
            subject = signal_intake_subject(signal.level)
            await js.publish(subject, signal.to_json(), headers={"Nats-Msg-Id": signal.signal_id})
            await asyncio.sleep(PACE_S)
    finally:
        await nc.close()


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def measure(stack: Stack, long_id: str, short_id: str) -> dict[str, Any]:
    """Signal latency on the open board, then page loads, all in one browser."""
    login = console_url(stack)
    origin = login.split("/?", 1)[0]
    async with chromium() as browser:
        context = await browser.new_context()
        async with opened(context, login) as board:
            await board.wait_for_selector('body[data-live="open"]')
            assert await board.evaluate(WATCH, long_id), "no board row for the task"
            await publish_signals(stack.nats_url(), long_id)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                seen: dict[str, float] = await board.evaluate("window.signalSeen")
                if len(seen) >= SIGNALS:
                    break
                await asyncio.sleep(0.2)
        loads: dict[str, list[float]] = {"long": [], "short": [], "board": []}
        html: dict[str, list[float]] = {"long": [], "short": [], "board": []}
        paths = {"long": f"/tasks/{long_id}", "short": f"/tasks/{short_id}", "board": "/"}
        page = await context.new_page()
        for round_ in range(LOADS + 1):
            for name, path in paths.items():
                await page.goto(origin + path, wait_until="load")
                timing = await page.evaluate(NAVIGATION)
                if round_:  # the first round warms the console's connections and caches
                    loads[name].append(timing["load"])
                    html[name].append(timing["html"])
        await page.close()
        await context.close()
    latencies = list(seen.values())
    return {"latencies": latencies, "loads": loads, "html": html}


def main() -> None:
    risk = {
        "retry_count": OFF,
        "repeated_fingerprint": OFF,
        "steps": dict.fromkeys(STEP_RULES, OFF),
    }
    config = sample_config(
        [check_gate()], loop={"max_retries": ITERATIONS, "max_iterations": ITERATIONS}, risk=risk
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp,
        running_stack(Path(tmp), config) as stack,
    ):
        short_id, long_id = "bench-short", "bench-long"
        run_task(stack, short_id, [{"developer": {"write": {"calc.py": GOOD}}, **REVIEW}])
        started = time.monotonic()
        status = run_task(stack, long_id, long_script())
        took = time.monotonic() - started
        print(f"long task: {status['iteration']} iterations in {took:.0f} s")
        found = asyncio.run(measure(stack, long_id, short_id))
    latencies = found["latencies"]
    med = {name: statistics.median(values) for name, values in found["loads"].items()}
    html = {name: statistics.median(values) for name, values in found["html"].items()}
    print(f"signals seen on the board: {len(latencies)} of {SIGNALS}")
    for name in ("long", "short", "board"):
        print(f"{name:>5} page: load {med[name]:6.1f} ms median (HTML {html[name]:6.1f} ms)")
    result = {
        "signal_p50_ms": round(statistics.median(latencies), 1),
        "signal_p99_ms": round(percentile(latencies, 0.99), 1),
        "signal_max_ms": round(max(latencies), 1),
        "signals_seen": len(latencies),
        "signals_sent": SIGNALS,
        "task_page_ms": round(med["long"], 1),
        "task_page_html_ms": round(html["long"], 1),
        "task_iterations": status["iteration"],
        "short_task_page_ms": round(med["short"], 1),
        "board_load_ms": round(med["board"], 1),
        "page_ratio": round(med["long"] / med["short"], 2),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 iterations, 10 signals, 2 loads")
    if parser.parse_args().quick:
        ITERATIONS, SIGNALS, LOADS = 3, 10, 2
    main()
