"""What the worker's start guard costs each activity (``semspec/workflow/signing/start_guard.py``).

Starts a Temporal dev server, starts signed tasks (no worker polls their queue, so each stays at
its first event), and times the guard's verdict for a run it has not seen (one history read and
one signature check) against one it has (a dict lookup), the cost every later activity of the
run pays. Prints one JSON object on its last line; ``--quick`` runs fewer rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from dataclasses import replace

from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from semspec.core.owner_key import OwnerKey
from semspec.services.specs import binary
from semspec.vocabulary.workflow_names import TASK_WORKFLOW, task_workflow_id
from semspec.workflow.signing.start_guard import StartGuard
from semspec.workflow.task.messages import (
    TASK_START,
    LoopLimits,
    RoleSpec,
    TaskInput,
    TaskSpec,
    signed_start,
)


def task(task_id: str) -> TaskInput:
    spec = TaskSpec(task_id, "bench", "/nonexistent", task_files=["calc.py"], developer=RoleSpec())
    return TaskInput(spec, [], LoopLimits(), run_dir="/nonexistent/run")


async def main(rounds: int) -> dict[str, object]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary("temporal"), dev_server_extra_args=["--log-level", "error"]
    )
    try:
        owner, queue = OwnerKey.generate(), f"bench-{uuid.uuid4().hex}"
        guard = StartGuard(env.client, queue, owner.public_key)
        infos = []
        for _ in range(rounds):
            task_id = f"bench-{uuid.uuid4().hex[:8]}"
            wid = task_workflow_id(task_id)
            handle = await env.client.start_workflow(
                TASK_WORKFLOW, signed_start(owner, TASK_START, wid, task(task_id)),
                id=wid, task_queue=queue,
            )  # fmt: skip
            infos.append(
                replace(
                    ActivityEnvironment.default_info(),
                    workflow_id=wid,
                    workflow_run_id=handle.result_run_id,
                    workflow_type=TASK_WORKFLOW,
                    workflow_namespace=env.client.namespace,
                )
            )
        first, later = [], []
        for info in infos:
            activity_env = ActivityEnvironment()
            activity_env.info = info
            for into in (first, later, later, later):
                began = time.perf_counter()
                await activity_env.run(guard.verified_start)
                into.append(time.perf_counter() - began)
        for info in infos:
            await env.client.get_workflow_handle(info.workflow_id).terminate("bench done")
    finally:
        await env.shutdown()
    first.sort()
    later.sort()
    return {
        "runs": rounds,
        "first_activity_ms_median": round(first[len(first) // 2] * 1000, 3),
        "first_activity_ms_p90": round(first[int(len(first) * 0.9)] * 1000, 3),
        "later_activity_us_median": round(later[len(later) // 2] * 1e6, 1),
        "refused": guard.refused,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 runs instead of 100")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(10 if args.quick else 100))), flush=True)
    # The figures are out: leave without finalizing the interpreter, which can abort (exit 134,
    # PyGILState_Release) while the Temporal SDK's core thread is still winding down.
    os._exit(0)
