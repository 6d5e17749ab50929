"""Record the ``TaskWorkflow`` histories that ``tests/workflow/test_replay.py`` replays.

Run ``python tests/histories/record.py`` from the repository root. It starts a Temporal dev
server and an in-process worker and runs two tasks:

- every branch of the loop (a failed gate, a ``request_changes``, an escalation for exhausted
  retries, a human ``retry``, a reviewer asking for more information, the enrichment, approval
  and the commit), written to ``task_workflow_all_branches.json``;
- risk signals in the middle of steps: a ``halt`` cancels the running gate, the escalation is
  answered with ``retry``, a ``pause`` cancels the next gate and checkpoints; the first run is
  ``task_workflow_signals.json`` and the run it continued as (resumed from the checkpoint,
  approved) ``task_workflow_signals_resumed.json``.

- a task that lands itself (``land: auto``) whose land conflicts: it forked from an older commit
  of main, which has since changed the same line, so the land escalates ``land_conflict``; the
  ``retry`` answer starts it again on main's tip, and the second approval lands by fast-forward;
  written to ``task_workflow_land_auto.json``.

``python tests/histories/record.py signals`` records only the second (likewise ``all-branches``,
``land-auto``).

When to re-record (ADR 0007): a change within a minor version must replay these histories as they
are (guard a change of commands with ``workflow.patched`` and list it in
``semspec/workflow/patches.py``); the first commit of a new minor version removes the old patches
and records them again, as does an intended change the histories cannot replay. An unintended
replay failure means the change would break running tasks. Issue 27 recorded all three again
after the patches of 0.1.0 development went.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from semspec.vocabulary.workflow_names import task_workflow_id

HERE = Path(__file__).resolve().parent
HISTORY_FILE = HERE / "task_workflow_all_branches.json"
TASK_ID = "replay-all-branches"
WORKFLOW_ID = task_workflow_id(TASK_ID)
SIGNALS_FILE = HERE / "task_workflow_signals.json"
SIGNALS_RESUMED_FILE = HERE / "task_workflow_signals_resumed.json"
SIGNALS_TASK_ID = "replay-signals"
SIGNALS_WORKFLOW_ID = task_workflow_id(SIGNALS_TASK_ID)
LAND_FILE = HERE / "task_workflow_land_auto.json"
LAND_TASK_ID = "replay-land-auto"
LAND_WORKFLOW_ID = task_workflow_id(LAND_TASK_ID)

START = "def add(a, b):\n    return 0\n"
"""The base commit's calc.py: the first developer turn must change it (an unchanged turn is
sent back without gates)."""
GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
ITERATIONS: list[dict[str, Any]] = [
    # 1: the required gate fails (retry 1 of 1).
    {"developer": {"write": {"calc.py": BROKEN}}},
    # 2: the reviewer requests changes (retry 2 > 1): the loop escalates to a human.
    {
        "developer": {"write": {"calc.py": GOOD}},
        "reviewer": {
            "verdict": "request_changes",
            "summary": "no tests",
            "findings": [{"message": "add a test for sub"}],
        },
    },
    # 3 (after the human's retry): more information is requested, enriched, then approved.
    {
        "developer": {"write": {"calc.py": GOOD, "test_calc.py": "from calc import sub\n"}},
        "reviewer": {
            "verdict": "need_more_info",
            "summary": "show me the task files",
            "needed_evidence": ["task_files"],
        },
        "reviewer_followup": {"verdict": "approve", "summary": "looks right"},
    },
]


async def record(out: Path = HISTORY_FILE) -> Path:
    """Run the all-branches task on a fresh dev server and write its history to ``out``."""
    from temporalio.testing import WorkflowEnvironment

    from semspec.services.specs import binary
    from semspec.workflow.task.messages import Resolution, TaskResult
    from semspec.workflow.worker import build_worker
    from tests.support.owner import OWNER, answer
    from tests.support.repos import make_repo
    from tests.support.tasks import start, task_input, wait_for_phase, write_script

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, {"README.md": "# sample\n", "calc.py": START})
        script = write_script(root / "script.yaml", ITERATIONS)
        inp = task_input(repo, script, TASK_ID, max_retries=1)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=binary("temporal"),
            dev_server_extra_args=["--log-level", "error"],
        )
        try:
            queue = f"record-{uuid.uuid4()}"
            async with build_worker(env.client, queue, None, owner=OWNER):
                handle = await start(env.client, inp, queue)
                await wait_for_phase(handle, "escalated")
                await answer(handle, Resolution("retry", "add a test"))
                result: TaskResult = await asyncio.wait_for(handle.result(), 120)
                if result.outcome != "approved":
                    raise SystemExit(f"the recorded task ended {result.outcome}: {result.reason}")
                history = await handle.fetch_history()
        finally:
            await env.shutdown()
    out.write_text(history.to_json() + "\n", encoding="utf-8")
    return out


async def record_signals(
    out: Path = SIGNALS_FILE, resumed_out: Path = SIGNALS_RESUMED_FILE
) -> list[Path]:
    """Run the risk-signals task on a fresh dev server and write the histories of its two runs."""
    from temporalio.testing import WorkflowEnvironment

    from semspec.services.specs import binary
    from semspec.vocabulary.events import RiskSignalInput
    from semspec.vocabulary.workflow_names import SIGNAL_HALT, SIGNAL_PAUSE
    from semspec.workflow.task.messages import Resolution, TaskResult
    from semspec.workflow.worker import build_worker
    from tests.support.owner import OWNER, answer, send
    from tests.support.repos import make_repo
    from tests.support.slow_gate import gate_pid, slow_gate
    from tests.support.tasks import start, task_input, wait_for_phase, write_script

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, {"README.md": "# sample\n", "calc.py": BROKEN})
        approve = {"developer": {"write": {"calc.py": GOOD}}, "reviewer": {"verdict": "approve"}}
        script = write_script(root / "script.yaml", [approve])
        gates = root / "gate"
        # The slow gate writes its pid outside the worktree, where a sandboxed gate cannot.
        os.environ["SEMSPEC_GATES__SANDBOX"] = "none"
        inp = task_input(repo, script, SIGNALS_TASK_ID, gates=[slow_gate(gates, slow_runs=2)])
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=binary("temporal"),
            dev_server_extra_args=["--log-level", "error"],
        )
        try:
            queue = f"record-{uuid.uuid4()}"
            async with build_worker(env.client, queue, None, owner=OWNER):
                handle = await start(env.client, inp, queue)
                await gate_pid(gates, 0)
                halt = RiskSignalInput("conflicting_changes", "halt", "h1", "calc.py")
                await send(handle, SIGNAL_HALT, halt)
                await wait_for_phase(handle, "escalated")
                await answer(handle, Resolution("retry", "go on"))
                await gate_pid(gates, 1)
                await send(handle, SIGNAL_PAUSE, RiskSignalInput("context_pressure", "pause", "p1"))
                result: TaskResult = await asyncio.wait_for(handle.result(), 120)
                if result.outcome != "approved" or len(result.status.checkpoints) != 1:
                    raise SystemExit(f"the recorded task ended {result.outcome}: {result.reason}")
                first_run = handle.first_execution_run_id
                first = await env.client.get_workflow_handle(
                    handle.id, run_id=first_run
                ).fetch_history()
                resumed = await env.client.get_workflow_handle(handle.id).fetch_history()
        finally:
            await env.shutdown()
    out.write_text(first.to_json() + "\n", encoding="utf-8")
    resumed_out.write_text(resumed.to_json() + "\n", encoding="utf-8")
    return [out, resumed_out]


async def record_land(out: Path = LAND_FILE) -> Path:
    """Run the land-auto task on a fresh dev server and write its history to ``out``."""
    from dataclasses import replace

    import pygit2
    from temporalio.testing import WorkflowEnvironment

    from semspec.services.specs import binary
    from semspec.workflow.task.messages import Resolution, TaskResult
    from semspec.workflow.worker import build_worker
    from tests.support.owner import OWNER, answer
    from tests.support.repos import commit_all, make_repo
    from tests.support.tasks import start, task_input, wait_for_phase, write_script

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, {"README.md": "# sample\n", "calc.py": START})
        git = pygit2.Repository(str(repo))
        forked = str(git.head.target)
        # main moves on the line the task changes: the task, forked before, conflicts.
        (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n", encoding="utf-8")
        commit_all(git, "main moves")
        approve = {"verdict": "approve", "summary": "ok"}
        script = write_script(
            root / "script.yaml",
            [
                {"developer": {"write": {"calc.py": GOOD}}, "reviewer": approve},
                {"developer": {"write": {"calc.py": GOOD + "# again\n"}}, "reviewer": approve},
            ],
        )
        inp = task_input(repo, script, LAND_TASK_ID)
        inp = replace(inp, spec=replace(inp.spec, auto_land=True, after_commits=[forked]))
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=binary("temporal"),
            dev_server_extra_args=["--log-level", "error"],
        )
        try:
            queue = f"record-{uuid.uuid4()}"
            async with build_worker(env.client, queue, None, owner=OWNER):
                handle = await start(env.client, inp, queue)
                await wait_for_phase(handle, "escalated")
                await answer(handle, Resolution("retry", "make it again on main"))
                result: TaskResult = await asyncio.wait_for(handle.result(), 120)
                land = result.status.land or {}
                if result.outcome != "approved" or land.get("state") != "landed":
                    raise SystemExit(f"the recorded task ended {result.outcome}: {land}")
                history = await handle.fetch_history()
        finally:
            await env.shutdown()
    out.write_text(history.to_json() + "\n", encoding="utf-8")
    return out


async def _main(which: str) -> list[Path]:
    written = []
    if which in ("all", "all-branches"):
        written.append(await record())
    if which in ("all", "signals"):
        written += await record_signals()
    if which in ("all", "land-auto"):
        written.append(await record_land())
    return written


if __name__ == "__main__":
    # Run as a script: make the repository root importable (for ``tests.support``).
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which not in ("all", "all-branches", "signals", "land-auto"):
        raise SystemExit(
            f"error: unknown history {which!r}\nhint: all, all-branches, signals or land-auto"
        )
    for path in asyncio.run(_main(which)):
        print(f"wrote {path}")
