"""A workflow that does nothing, in its own module so Temporal's sandbox can re-import it.

Used by ``stack_startup.py`` for the floor of a workflow round trip; not a benchmark itself.
"""

from __future__ import annotations

from temporalio import workflow


@workflow.defn(name="BenchNoop")
class NoopWorkflow:
    """Returns at once: one workflow task, no activities."""

    @workflow.run
    async def run(self) -> None:
        return None
