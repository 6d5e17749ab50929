"""The task queue of the loop's event publishing, apart from the queue of gates and agents.

Issue 26: with 50 tasks whose gates took 10 s on one worker, the outbox's ``publish_events``
calls waited for an activity slot behind gates and agents, so loop events reached the monitor
up to 22 s late, and a conflict halt can come only after the later task's ``files`` event.
The outbox schedules its publishing on ``event_queue(task_queue)``, which every worker serves
with slots of its own (``semspec/workflow/event_worker.py``); a publish holds its slot for one
NATS round trip.
Imported by workflow code: pure, no I/O.
"""

from __future__ import annotations

EVENT_SLOTS = 32
"""Publishing calls a worker runs at once: one per draining task, each a NATS round trip. Tasks
started together (a plan's, or ``bench/event_lag.py``'s 50) each queue their ``iteration`` event
at once; with 8 slots those calls queued for a slot (docs/operations.md, "Loop events never
dropped")."""


def event_queue(task_queue: str) -> str:
    """The queue that carries the publishing of the loop run on ``task_queue``."""
    return f"{task_queue}.events"
