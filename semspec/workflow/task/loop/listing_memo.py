"""Keeps the task's ``TaskListing`` memo equal to its status, so lists read it from visibility.

``TaskState`` is the one writer of the status; this watcher only reads it. After every
activation in which the listing differs from what the memo holds, it upserts the memo (a
``ModifyWorkflowProperties`` command), so every change shows, from any writer, without a call at
each place that changes the status. The last change of a task (``finished``) is followed by the
outbox's drain, an activity, so the watcher writes it before the workflow returns.

Runs recorded before the memo existed replay without it (patch ``listing-memo``, ADR 0007).
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

from semspec.workflow.task.listing import TaskListing, listing_of, memo_fields
from semspec.workflow.task.messages import TaskStatus

LISTING_MEMO_PATCH = "listing-memo"


class ListingMemo:
    """The memo's copy of the listing and its watcher; call only from the workflow."""

    def __init__(self, status: TaskStatus) -> None:
        self._status = status
        self._written: TaskListing | None = None
        self._watcher: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Write the listing now and whenever it changes (runs that record the patch only)."""
        if self._watcher is not None or not workflow.patched(LISTING_MEMO_PATCH):
            return
        self._write()
        self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await workflow.wait_condition(self._changed)
            self._write()

    def _changed(self) -> bool:
        return listing_of(self._status) != self._written

    def _write(self) -> None:
        listing = listing_of(self._status)
        if listing != self._written:
            workflow.upsert_memo(memo_fields(listing))
            self._written = listing
