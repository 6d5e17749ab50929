"""Record the ``TaskWorkflow`` history that ``tests/test_replay.py`` replays.

Run ``python tests/histories/record.py`` from the repository root. It starts a Temporal dev
server and an in-process worker, runs one task through every branch of the loop (a failed gate,
a ``request_changes``, an escalation for exhausted retries, a human ``retry``, a reviewer asking
for more information, the enrichment, approval and the commit) and writes the history as JSON.

Re-record after every intended change to ``workflow/task/workflows.py``: the replay test then
proves that the *next* change replays this history deterministically (or that it is guarded by
``workflow.patched``). An unintended replay failure means the change would break running tasks.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HISTORY_FILE = Path(__file__).resolve().parent / "task_workflow_all_branches.json"
WORKFLOW_ID = "task-replay-all-branches"

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
    from tests.support.repos import make_repo
    from tests.support.tasks import start, task_input, wait_for_phase, write_script
    from workflow.task.shared import UPDATE_RESOLVE, Resolution, TaskResult
    from workflow.task.worker import build_worker

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        make_repo(repo, {"README.md": "# sample\n", "calc.py": BROKEN})
        script = write_script(root / "script.yaml", ITERATIONS)
        inp = task_input(repo, script, WORKFLOW_ID.removeprefix("task-"), max_retries=1)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=binary("temporal"),
            dev_server_extra_args=["--log-level", "error"],
        )
        try:
            queue = f"record-{uuid.uuid4()}"
            async with build_worker(env.client, queue, None):
                handle = await start(env.client, inp, queue)
                await wait_for_phase(handle, "escalated")
                await handle.execute_update(UPDATE_RESOLVE, Resolution("retry", "add a test"))
                result: TaskResult = await asyncio.wait_for(handle.result(), 120)
                if result.outcome != "approved":
                    raise SystemExit(f"the recorded task ended {result.outcome}: {result.reason}")
                history = await handle.fetch_history()
        finally:
            await env.shutdown()
    out.write_text(history.to_json() + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    # Run as a script: make the repository root importable (for ``tests.support``).
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    print(f"wrote {asyncio.run(record())}")
