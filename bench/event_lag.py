"""Event lag: how late the task loop's events reach the monitor's stream while gates fill the
worker's activity slots, against one task alone.

One embedded stack (``semspec up``: NATS, the Temporal dev server, one worker and the risk
monitor) on a sample repository with a file per task. Its one gate sleeps ``GATE_S`` and passes.
First one task runs alone (the baseline); then ``TASKS`` tasks, each with scripted agents: the
developer writes its own file, the reviewer approves. Each side is submitted while the worker is
stopped, then the worker is started again (``semspec up``), so the tasks start together. Each
task's gate holds an activity slot for ``GATE_S``, so with more tasks than the worker's slots
(``MAX_CONCURRENT_ACTIVITIES``) the slots stay full for the whole run (issue 26).

A loop event's lag is the time JetStream stored it minus the time the loop recorded it (the
event's ``at``, taken on the worker when the step that produced it returned). Agent ``step``
events are left out: the agent's own activity publishes them as it goes. Both clocks are this
machine's. A task that escalates (e.g. a step's heartbeat missed on a crowded machine) ends
with its ``escalation`` event instead of ``finished``; ``escalated`` counts them.

Where the time goes, read from each loaded task's Temporal history (the ``publish_events`` call
that carried the event): an event that no call carried, or that was stored before its call
started, was published by the activity that made it (``early``, ``EventPublisher.publish_now``);
for the others, ``queued`` runs from ``at`` until the workflow scheduled that call (for an event
an activity made, this includes the wait for the workflow task that takes the activity's result;
also an earlier call still out), ``dispatch`` until the event worker's poll took it, ``publish``
until JetStream stored the event. ``by_kind`` gives p50/p95/max of the lag per event kind. All
of it runs on this machine's cores, shared with the gates, the agents and the services, so the
figures follow its load: ``load_1m`` is ``/proc/loadavg``'s first figure before and after the
loaded run.

Run: ``python bench/event_lag.py`` (``--quick``: 5 tasks, 2 s gates, what a test runs). The
last line is one JSON object: ``tasks``, ``gate_s``, ``events``, ``p50_s``, ``p95_s``, ``max_s``,
``over_1s``, ``over_5s``, ``files_over_5s``, ``baseline_p95_s``, ``baseline_max_s``,
``p95_ratio`` (loaded p95 over the baseline's), ``targets_met`` (p95 < 1 s, max < 3 s),
``parts`` (p50/p95/max of ``queued``, ``dispatch``, ``publish``, over the events found in the
histories that the outbox stored), ``early``, ``by_kind``, ``escalated`` and ``load_1m``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from semspec.vocabulary.events import event_from_json
from semspec.vocabulary.workflow_names import task_workflow_id
from tests.support.stack import Stack, python_gate, running_stack, sample_config, write_script

TASKS = 50
GATE_S = 10.0
QUICK_TASKS = 5
QUICK_GATE_S = 2.0
SUBMITTERS = 4
"""``task submit`` processes at once: more only crowd the machine's two cores."""
ENDS = ("finished", "escalation")
"""Kinds after which a task sends no more loop events until someone acts."""
TARGET_P95_S = 1.0
TARGET_MAX_S = 3.0


@dataclass
class Lag:
    """One stored loop event and how late it reached the stream."""

    task_id: str
    kind: str
    seconds: float
    run_id: str
    at: str
    recorded: float
    stored: float


def task_file(index: int) -> str:
    return f"part{index}.py"


def submit(stack: Stack, task_id: str, index: int) -> None:
    """Submit one task whose developer writes its own file and whose reviewer approves."""
    name = task_file(index)
    script = write_script(
        stack.root / "scripts" / f"{task_id}.yaml",
        [
            {
                "developer": {"write": {name: f"VALUE = {index + 1}\n"}},
                "reviewer": {"verdict": "approve", "summary": "fine"},
            }
        ],
    )
    done = stack.cli(
        "task", "submit", f"task {task_id}", "--id", task_id, "--file", name,
        "--criterion", f"VALUE is {index + 1}", "--script", str(script),
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"task submit {task_id} failed: {done.stderr}")


async def collect(url: str, task_ids: set[str], timeout_s: float) -> list[Lag]:
    """Every stored loop event of ``task_ids``, read until each has ended (``ENDS``)."""
    nc = await nats.connect(url, connect_timeout=5)
    lags: list[Lag] = []
    finished: set[str] = set()
    deadline = time.monotonic() + timeout_s
    try:
        sub = await nc.jetstream().subscribe("agent.monitor.>", ordered_consumer=True)
        while finished != task_ids:
            if time.monotonic() > deadline:
                missing = sorted(task_ids - finished)
                raise SystemExit(f"tasks never finished within {timeout_s:.0f} s: {missing}")
            try:
                msg = await sub.next_msg(timeout=2.0)
            except nats.errors.TimeoutError:
                continue
            event = event_from_json(msg.data)
            if event.task_id not in task_ids or event.kind == "step" or not event.at:
                continue
            stored = msg.metadata.timestamp.timestamp()
            recorded = datetime.fromisoformat(event.at).timestamp()
            lags.append(
                Lag(
                    event.task_id, event.kind, stored - recorded, event.run_id, event.at,
                    recorded, stored,
                )
            )  # fmt: skip
            if event.kind in ENDS:
                finished.add(event.task_id)
    finally:
        await nc.close()
    return lags


def run(stack: Stack, prefix: str, count: int, timeout_s: float, first: int = 0) -> list[Lag]:
    """Submit ``count`` tasks, on the files from ``task_file(first)`` on, and read their
    events' lags.

    The tasks are submitted while the stack's worker is stopped, and ``up`` starts it again:
    they then start together, as a plan's tasks do, instead of one every few seconds (the
    pace of ``task submit`` processes on two cores, slower than gates end).
    """
    ids = [f"{prefix}{i}" for i in range(count)]
    stack.kill("worker")
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        list(pool.map(lambda pair: submit(stack, pair[1], pair[0]), enumerate(ids, first)))
    up = stack.cli("up", "--json", timeout=120)
    if up.returncode != 0:
        raise SystemExit(f"semspec up failed: {up.stderr}")
    return asyncio.run(collect(stack.nats_url(), set(ids), timeout_s))


@dataclass
class Call:
    """One ``task.publish_events`` call of a history: when it was scheduled and taken."""

    scheduled: float
    started: float | None = None


PUBLISH = "task.publish_events"


def _seconds(event: HistoryEvent) -> float:
    return event.event_time.ToDatetime().timestamp()


def calls_by_event(events: list[HistoryEvent]) -> dict[tuple[str, str], Call]:
    """The publishing call that carried each loop event, by the event's ``(kind, at)``."""
    calls: dict[int, Call] = {}
    carried: dict[tuple[str, str], Call] = {}
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name != PUBLISH:
                continue
            call = calls[event.event_id] = Call(_seconds(event))
            batch = json.loads(attributes.input.payloads[0].data)
            for queued in batch["events"]:
                carried.setdefault((queued["kind"], queued["at"]), call)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            taken = calls.get(started.scheduled_event_id)
            if taken is not None:
                taken.started = _seconds(event)
    return carried


async def lag_parts(address: str, lags: list[Lag]) -> tuple[dict[str, list[float]], int]:
    """Each outbox-stored event's lag split into ``queued``, ``dispatch`` and ``publish``, and
    how many events their own activity stored (``early``, module docstring)."""
    client = await Client.connect(address)
    parts: dict[str, list[float]] = {"queued": [], "dispatch": [], "publish": []}
    early = 0
    for task_id, run_id in sorted({(lag.task_id, lag.run_id) for lag in lags}):
        handle = client.get_workflow_handle(task_workflow_id(task_id), run_id=run_id)
        carried = calls_by_event(list((await handle.fetch_history()).events))
        for lag in lags:
            if lag.run_id != run_id:
                continue
            call = carried.get((lag.kind, lag.at))
            if call is None or lag.stored < (call.started or lag.stored):
                early += 1  # in no outbox call, or stored before the call was taken
                continue
            if call.started is None:
                continue
            parts["queued"].append(call.scheduled - lag.recorded)
            parts["dispatch"].append(call.started - call.scheduled)
            parts["publish"].append(lag.stored - call.started)
    return parts, early


def load_1m() -> float:
    """The machine's load average over the last minute."""
    return float(Path("/proc/loadavg").read_text(encoding="utf-8").split()[0])


def spread(values: list[float]) -> dict[str, float | None]:
    """p50, p95 and max of ``values`` (None when empty), rounded to milliseconds."""
    if not values:
        return {"p50_s": None, "p95_s": None, "max_s": None}
    return {
        "p50_s": round(percentile(values, 0.5), 3),
        "p95_s": round(percentile(values, 0.95), 3),
        "max_s": round(max(values), 3),
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(tasks: int, gate_s: float) -> dict[str, Any]:
    """The figures of one stack: one task alone, then ``tasks`` together."""
    # One file more, the lone task's: a task waits for an unlanded one on the same file.
    files = {task_file(i): "VALUE = 0\n" for i in range(tasks + 1)}
    gate = python_gate("wait", f"import time; time.sleep({gate_s})", timeout=gate_s + 60)
    config = sample_config([gate], loop={"max_retries": 0, "activity_attempts": 1})
    with (
        tempfile.TemporaryDirectory(prefix="bench-event-lag-") as tmp,
        running_stack(Path(tmp), config, files) as stack,
    ):
        alone = run(stack, "alone", 1, 120 + gate_s, first=tasks)
        load_before = load_1m()
        # Bounded: the slots run the gates a few at a time, so the bound grows with the tasks.
        loaded = run(stack, "load", tasks, 180 + 3 * gate_s * tasks)
        load_after = load_1m()
        parts, early = asyncio.run(lag_parts(stack.temporal_address(), loaded))
    seconds = [lag.seconds for lag in loaded]
    base = [lag.seconds for lag in alone]
    p95, worst = percentile(seconds, 0.95), max(seconds)
    base_p95 = percentile(base, 0.95)
    return {
        "tasks": tasks,
        "gate_s": gate_s,
        "events": len(seconds),
        "p50_s": round(percentile(seconds, 0.5), 3),
        "p95_s": round(p95, 3),
        "max_s": round(worst, 3),
        "over_1s": sum(s > 1 for s in seconds),
        "over_5s": sum(s > 5 for s in seconds),
        "files_over_5s": sum(lag.seconds > 5 for lag in loaded if lag.kind == "files"),
        "baseline_p95_s": round(base_p95, 3),
        "baseline_max_s": round(max(base), 3),
        "p95_ratio": round(p95 / base_p95, 1) if base_p95 > 0 else None,
        "targets_met": p95 < TARGET_P95_S and worst < TARGET_MAX_S,
        "parts": {name: spread(values) for name, values in parts.items()},
        "early": early,
        "by_kind": {
            kind: spread([lag.seconds for lag in loaded if lag.kind == kind])
            for kind in sorted({lag.kind for lag in loaded})
        },
        "escalated": sum(lag.kind == "escalation" for lag in loaded),
        "load_1m": [load_before, load_after],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 tasks, 2 s gates")
    args = parser.parse_args()
    tasks, gate_s = (QUICK_TASKS, QUICK_GATE_S) if args.quick else (TASKS, GATE_S)
    report = measure(tasks, gate_s)
    print(
        f"{report['tasks']} tasks x {report['gate_s']:.0f} s gates: {report['events']} loop "
        f"events, lag p50 {report['p50_s']} s, p95 {report['p95_s']} s, max {report['max_s']} s "
        f"({report['over_5s']} over 5 s, {report['files_over_5s']} of them files events); one "
        f"task alone: p95 {report['baseline_p95_s']} s, max {report['baseline_max_s']} s"
    )
    for name, figures in report["parts"].items():
        p50, p95, top = figures["p50_s"], figures["p95_s"], figures["max_s"]
        print(f"  {name}: p50 {p50} s, p95 {p95} s, max {top} s")
    print(f"  stored by the activity that made them: {report['early']} events")
    for kind, figures in report["by_kind"].items():
        p50, p95, top = figures["p50_s"], figures["p95_s"], figures["max_s"]
        print(f"  {kind}: p50 {p50} s, p95 {p95} s, max {top} s")
    if report["escalated"]:
        print(f"  escalated (ended without finished): {report['escalated']} tasks")
    print(f"  load average (1 min) before and after: {report['load_1m']}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
