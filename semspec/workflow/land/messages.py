"""The land workflow's name, signed input and purpose (one per task land; docs/landing.md).

The input, ``LandInput``, and the activity's name are defined with the task loop, which runs
the same activity (``task.land_messages``); they are re-exported here.

Types are evaluated here (no postponed annotations): Temporal's sandbox decodes these from
their hints.
"""

from semspec.vocabulary.workflow_names import LAND_WORKFLOW
from semspec.workflow.task.land_messages import LAND_ACTIVITY, LandInput

__all__ = ["LAND_ACTIVITY", "LAND_START", "LAND_WORKFLOW", "LandInput", "land_workflow_id"]

LAND_START = "semspec/land-start"
"""Purpose of the owner's signature over a land's start (ADR 0004)."""


def land_workflow_id(task_id: str) -> str:
    """The id of the workflow that lands ``task_id``; a later land of the task reuses it."""
    return f"land-{task_id}"
