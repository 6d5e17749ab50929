"""The land workflow's name, signed input and purpose (one per task land; docs/landing.md).

Types are evaluated here (no postponed annotations): Temporal's sandbox decodes these from
their hints.
"""

from dataclasses import dataclass, field

from semspec.workflow.gates.types import GateSpec

LAND_WORKFLOW = "LandWorkflow"
"""Workflow type of a land; its id is ``land_workflow_id(task_id)``."""
LAND_START = "semspec/land-start"
"""Purpose of the owner's signature over a land's start (ADR 0004)."""
LAND_ACTIVITY = "land.run"


def land_workflow_id(task_id: str) -> str:
    """The id of the workflow that lands ``task_id``; a later land of the task reuses it."""
    return f"land-{task_id}"


@dataclass
class LandInput:
    """What one land does; the owner signs all of it, gates included, as for a task."""

    task_id: str
    repo_path: str
    base_branch: str
    run_dir: str
    strategy: str = "rebase"
    gates: list[GateSpec] = field(default_factory=list)
    """The required gates run on the combined result (from the config, as at submit)."""
    max_output_bytes: int = 16_384
    push_remote: str = ""
    """A remote to push the base branch to after it moved; empty: no push."""
    owner_key: str = ""
    start_signature: str = ""
