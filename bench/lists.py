"""How long the lists take with 500 tasks on the stack, beside the floor of asking Temporal at all.

Against a stack ``semspec up`` started in a fresh repository:

* ``temporal_list_empty_stack_s``: on the empty stack, a script that imports Temporal's client,
  connects and lists the task workflows (``cli_latency.py``'s floor of any command that asks
  Temporal anything); ``task_list_empty_s``: ``semspec task list`` there.
* Then ``TASKS`` tasks, a third each approved, escalated and running: same-named stand-ins of the
  task workflow (``_fake_task_workflow.py``) started with the memo a real task writes
  (``semspec.workflow.task.listing``), so visibility holds what it holds for that many real
  tasks without running their loops. The stand-ins' worker is stopped before measuring: the lists
  must not need one.
* ``task_list_500_s``: ``semspec task list --all`` (every row); ``task_list_default_s``: ``task
  list`` (its first 50); ``escalations_list_500_s``: ``escalations list`` (a third of them);
  ``temporal_list_500_s``: the bare script listing the 500; ``temporal_list_s``, the floor: the
  bare script's empty list (a workflow type with no runs) on the same server, in the same rounds,
  so a machine whose load changes during the run moves the floor with the lists. Target:
  ``task_list_500_s`` at most twice ``temporal_list_s`` + 0.3 s.
* ``board_500_ms``: the console's board page (``GET /`` of ``semspec ui``, every row rendered),
  median of the loads after the first; ``board_500_first_ms``: the first. Target: 500 ms.

CLI figures are medians of ``ROUNDS`` interleaved rounds of subprocesses, as a user runs them.
Every service started here is stopped here (``semspec down``); the repository lives in a
temporary folder. The last line printed is one JSON object. ``--quick`` (20 tasks, one round,
what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import httpx2 as httpx
from _fake_task_workflow import FakeTaskWorkflow
from cli_latency import TEMPORAL_LIST, bench_stack, interleaved, run
from temporalio.client import Client
from temporalio.worker import Worker

from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_workflow_id
from semspec.workflow.task.listing import TaskListing, memo_fields
from semspec.workflow.task.messages import Escalation

TASKS = 500
ROUNDS = 5
BOARD_LOADS = 6
STARTS_AT_ONCE = 32
LIST_SLACK_S = 0.3
BOARD_TARGET_MS = 500.0
KINDS = ("approved", "escalated", "running")

# ``cli_latency.py``'s bare list with the workflow type as an argument; os._exit as the CLI does.
BARE_LIST = """
import asyncio, os, sys
from temporalio.client import Client
async def main():
    client = await Client.connect(sys.argv[1])
    async for _ in client.list_workflows(f"WorkflowType = '{sys.argv[2]}'"):
        pass
asyncio.run(main())
sys.stdout.flush()
os._exit(0)
"""


def listing(kind: str, task_id: str) -> TaskListing:
    """The memo a real task of ``kind`` holds."""
    if kind == "approved":
        return TaskListing(f"bench {task_id}", "", "done", "approved", "", 1, 0, 1, cost_usd=0.01)
    if kind == "escalated":
        question = Escalation(
            f"{task_id}-1", task_id, "budget_exhausted", "retries exhausted: check failed", 2, 1
        )
        return TaskListing(
            f"bench {task_id}",
            "",
            "escalated",
            "",
            "",
            2,
            1,
            1,
            pending_escalation=asdict(question),
        )
    return TaskListing(f"bench {task_id}", "", "developing", "", "", 1, 0, 1, pressure="low")


async def populate(address: str, tasks: int) -> dict[str, int]:
    """Start ``tasks`` stand-in tasks and wait until visibility shows each in its state."""
    client = await Client.connect(address)
    queue = f"bench-lists-{uuid.uuid4().hex[:8]}"
    gate = asyncio.Semaphore(STARTS_AT_ONCE)

    async def start(n: int) -> None:
        kind, task_id = KINDS[n % len(KINDS)], f"bench-{n:04d}"
        async with gate:
            await client.start_workflow(
                TASK_WORKFLOW,
                kind == "approved",
                id=task_workflow_id(task_id),
                task_queue=queue,
                memo=memo_fields(listing(kind, task_id)),
            )

    counts = {kind: sum(1 for n in range(tasks) if KINDS[n % len(KINDS)] == kind) for kind in KINDS}
    async with Worker(client, task_queue=queue, workflows=[FakeTaskWorkflow]):
        await asyncio.gather(*(start(n) for n in range(tasks)))
        query = f"WorkflowType = '{TASK_WORKFLOW}' AND ExecutionStatus = 'Completed'"
        deadline = time.monotonic() + 120
        while (await client.count_workflows(query)).count < counts["approved"]:
            if time.monotonic() > deadline:
                raise RuntimeError("the approved stand-ins did not complete in 120 s")
            await asyncio.sleep(0.2)
    return counts


def board_loads(cli: list[str], env: dict[str, str], cwd: Path, tasks: int) -> list[float]:
    """Milliseconds of each of ``BOARD_LOADS`` loads of the board of ``semspec ui``."""
    proc = subprocess.Popen(
        [*cli, "ui", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            said = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"semspec ui printed nothing: {said[-2000:]}")
        url = httpx.URL(json.loads(line)["url"])
        named = {"Host": f"{url.host}:{url.port}"}
        loads: list[float] = []
        with httpx.Client(base_url=f"http://127.0.0.1:{url.port}", headers=named) as http:
            http.get("/", params={"token": url.params["token"]})
            for _ in range(BOARD_LOADS):
                started = time.perf_counter()
                page = http.get("/", timeout=60)
                loads.append((time.perf_counter() - started) * 1000)
                shown = page.text.count("data-task-id=")
                if page.status_code != 200 or shown != tasks:
                    raise RuntimeError(f"board: HTTP {page.status_code}, {shown} of {tasks} rows")
        return loads
    finally:
        proc.terminate()  # the process this function started
        proc.communicate(timeout=30)


def check_lists(cli: list[str], env: dict[str, str], cwd: Path, counts: dict[str, int]) -> None:
    """The lists show every stand-in in its state (a wrong list is not a fast one)."""
    rows = json.loads(run([*cli, "task", "list", "--all", "--json"], env, cwd))
    shown = {kind: sum(1 for r in rows if r["phase"] == kind) for kind in ("approved", "escalated")}
    if len(rows) != sum(counts.values()) or any(shown[k] != counts[k] for k in shown):
        raise RuntimeError(f"task list shows {len(rows)} rows, {shown}; expected {counts}")
    pending = json.loads(run([*cli, "escalations", "list", "--json"], env, cwd))
    if len(pending) != counts["escalated"]:
        raise RuntimeError(f"escalations list shows {len(pending)}, not {counts['escalated']}")


def main() -> None:
    load_before = os.getloadavg()[0]
    with bench_stack("semspec-lists-") as stack:
        cli, env, root, address = stack.cli, stack.env, stack.root, stack.address
        bare = [sys.executable, "-c", TEMPORAL_LIST, address]
        # The floor again once the stack is full, in the same rounds as the lists: an
        # empty list on the same server, so a load that changes mid-run moves both.
        floor = [sys.executable, "-c", BARE_LIST, address, "NoSuchWorkflow"]
        empty = interleaved(
            {"temporal_list_empty_stack": bare, "task_list_empty": [*cli, "task", "list"]},
            env,
            root,
            ROUNDS,
            warm=True,
        )
        counts = asyncio.run(populate(address, TASKS))
        check_lists(cli, env, root, counts)
        full = interleaved(
            {
                "temporal_list": floor,
                "temporal_list_500": bare,
                "task_list_500": [*cli, "task", "list", "--all"],
                "task_list_default": [*cli, "task", "list"],
                "escalations_list_500": [*cli, "escalations", "list"],
            },
            env,
            root,
            ROUNDS,
            warm=True,
        )
        loads = board_loads(cli, env, root, TASKS)
    figures = {**empty, **full}
    med = {name: round(f["median"], 3) for name, f in figures.items()}
    list_target = round(2 * med["temporal_list"] + LIST_SLACK_S, 3)
    board_ms = round(statistics.median(loads[1:]) if len(loads) > 1 else loads[0], 1)
    print(f"{TASKS} tasks, median of {ROUNDS} interleaved rounds, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load_before:.2f} -> "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'command':<24}{'median s':>10}{'min s':>8}{'max s':>8}")
    for name, f in figures.items():
        print(f"{name:<24}{f['median']:>10.3f}{f['min']:>8.3f}{f['max']:>8.3f}")
    print(f"board loads (ms): {', '.join(f'{ms:.0f}' for ms in loads)}")
    summary = {
        "tasks": TASKS,
        "temporal_list_s": med["temporal_list"],
        "temporal_list_empty_stack_s": med["temporal_list_empty_stack"],
        "task_list_empty_s": med["task_list_empty"],
        "task_list_500_s": med["task_list_500"],
        "task_list_default_s": med["task_list_default"],
        "escalations_list_500_s": med["escalations_list_500"],
        "temporal_list_500_s": med["temporal_list_500"],
        "board_500_ms": board_ms,
        "board_500_first_ms": round(loads[0], 1),
        "task_list_target_s": list_target,
        "board_target_ms": BOARD_TARGET_MS,
        "targets_met": med["task_list_500"] <= list_target and board_ms <= BOARD_TARGET_MS,
        "rounds": ROUNDS,
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 tasks, one round")
    if parser.parse_args().quick:
        TASKS, ROUNDS, BOARD_LOADS = 20, 1, 2
    main()
