"""Build and run the Temporal worker that serves task (and plan) workflows."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from semspec.core import telemetry
from semspec.core.owner_key import OwnerKey
from semspec.workflow.event_worker import TaskWorkers, build_event_worker
from semspec.workflow.land import activities as land_activities
from semspec.workflow.land.workflows import LandWorkflow
from semspec.workflow.plan.workflows import PlanWorkflow
from semspec.workflow.signing.child_signer import ChildSigner
from semspec.workflow.signing.start_guard import StartGuard, StartGuardInterceptor
from semspec.workflow.task import context_activities
from semspec.workflow.task.activities import TaskActivities
from semspec.workflow.task.index_activity import reindex_changes
from semspec.workflow.task.owner_check import OwnerCheck
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.restart_activity import restart_on_base
from semspec.workflow.task.wait_activity import wait_for_tasks
from semspec.workflow.task.workflows import TaskWorkflow

HEARTBEAT_THROTTLE = timedelta(seconds=2)
MAX_CONCURRENT_ACTIVITIES = 16
WORKFLOW_TASK_POLLS = 16
"""Workflow task polls a worker keeps open (Temporal's default is 5). A loop event made in an
activity joins the outbox only in the workflow task that takes the activity's result; with 50
tasks on one worker those tasks waited for a poll: p50 3.4-4.7 s with 5 polls, 0.9-1.1 s with
16, in two pairs of runs of ``bench/event_lag.py``'s load side by side (docs/operations.md)."""


@functools.cache
def activity_threads() -> ThreadPoolExecutor:
    """The thread pool that runs the plain ``def`` activities (git, files, the graph).

    One per process, with a thread for every activity a worker may run at once, so a slow
    activity never waits for a thread; idle threads cost nothing and end with the process.
    """
    return ThreadPoolExecutor(MAX_CONCURRENT_ACTIVITIES, thread_name_prefix="semspec-activity")


def workflows() -> list[type[Any]]:
    """Every workflow class the worker registers."""
    return [TaskWorkflow, PlanWorkflow, LandWorkflow]


def build_worker(
    client: Client,
    task_queue: str,
    publisher: EventPublisher | None,
    identity: str | None = None,
    *,
    owner: OwnerKey,
) -> TaskWorkers:
    """A worker for the task loop; activities share ``publisher`` for monitor events.

    Two Temporal workers run as one: the loop's, and the one of its event publishing
    (``event_worker.py``), whose slots gates and agents cannot take.

    ``identity`` names the worker in Temporal (default: the client's, ``pid@host``).
    ``owner`` is the stack owner's key: the worker runs no activity for a workflow run whose
    start that key did not sign, and signs the children its workflows start (ADR 0004,
    ``signing.start_guard``, ``signing.child_signer``). With telemetry on, workflows and
    activities are traced (their spans join the trace of whoever started the task,
    docs/telemetry.md).
    """
    activities = TaskActivities(publisher)
    guard = StartGuard(client, task_queue, owner.public_key)
    # Every activity passes the guard (StartGuard), whatever else traces it.
    interceptors = [StartGuardInterceptor(guard), *telemetry.current().worker_interceptors(client)]
    loop = Worker(
        client,
        task_queue=task_queue,
        identity=identity,
        workflows=workflows(),
        activities=[
            *activities.all(),
            OwnerCheck(owner.public_key).check_owner,
            ChildSigner(owner, guard).sign_start,
            context_activities.check_budget,
            context_activities.checkpoint,
            context_activities.finalize,
            reindex_changes,
            land_activities.land,
            restart_on_base,
            wait_for_tasks,
        ],
        max_concurrent_activities=MAX_CONCURRENT_ACTIVITIES,
        max_concurrent_workflow_task_polls=WORKFLOW_TASK_POLLS,
        activity_executor=activity_threads(),
        # A cancellation (a halt from the risk monitor) reaches an activity only in the answer
        # to a heartbeat: send them often enough that a halted step stops within seconds.
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        interceptors=interceptors,
    )
    # Loop events are published on a queue of their own, never behind a gate (issue 26).
    events = build_event_worker(client, task_queue, activities, identity, interceptors)
    return TaskWorkers(loop, events)


async def run_worker(
    client: Client,
    task_queue: str,
    nats_url: str | None,
    nats_options: dict[str, Any] | None = None,
    stop: asyncio.Event | None = None,
    on_ready: Any = None,
    identity: str | None = None,
    *,
    owner: OwnerKey,
    nats_replicas: int = 1,
) -> None:
    """Run until ``stop`` is set (or forever), then shut down gracefully; loop events go to
    ``nats_url`` (one URL or a comma-separated list) in streams of ``nats_replicas``."""
    publisher = (
        EventPublisher(nats_url, dict(nats_options or {}), replicas=nats_replicas)
        if nats_url
        else None
    )
    worker = build_worker(client, task_queue, publisher, identity, owner=owner)
    try:
        async with worker:
            if on_ready is not None:
                on_ready()
            await (stop or asyncio.Event()).wait()
    finally:
        if publisher is not None:
            await publisher.close()
