"""A same-named stand-in for ``TaskWorkflow``, in its own module so Temporal's sandbox can
re-import it: ``lists.py`` starts hundreds of them with the memo a real task writes, so visibility
holds what it would hold for that many tasks, without running their loops. Not a benchmark."""

from __future__ import annotations

from temporalio import workflow

from semspec.vocabulary.workflow_names import TASK_WORKFLOW


@workflow.defn(name=TASK_WORKFLOW)
class FakeTaskWorkflow:
    """Completes at once (an approved task) or stays open (a running or escalated one)."""

    @workflow.run
    async def run(self, finish: bool) -> None:
        if not finish:
            await workflow.wait_condition(lambda: False)
