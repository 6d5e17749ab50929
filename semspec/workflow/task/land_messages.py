"""The ``land.run`` activity's name, input and result: what ``LandWorkflow`` (``semspec task
land``) and a task that lands itself (``loop/landing.py``, ``loop.land: auto``) both run.

They live with the task loop, a floor below ``semspec.workflow.land`` that implements the land:
the loop calls the activity by its name and these types without needing that package, which
already needs this one (``tests/project/test_layers.py``: no two packages need each other).
``land.messages`` and ``land.landing`` re-export them under their old names.

Types are evaluated here (no postponed annotations): Temporal's sandbox decodes these from
their hints.
"""

from dataclasses import dataclass, field

from semspec.workflow.gates.types import GateSpec

LAND_ACTIVITY = "land.run"

LANDED = "landed"
ALREADY_LANDED = "already_landed"
CONFLICT = "land_conflict"
GATE_FAILED = "land_gate_failed"
REFUSED = "land_refused"
"""How a land ends (``LandResult.outcome``)."""


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


@dataclass
class LandResult:
    """How the land ended; ``outcome`` is one of the outcome constants above."""

    outcome: str
    method: str = ""
    commit: str = ""
    """The base tip after a land (the landed commit)."""
    base_before: str = ""
    conflicts: list[str] = field(default_factory=list)
    failed_gates: list[str] = field(default_factory=list)
    gate_feedback: str = ""
    """The failed gates' output, for the developer's retry."""
    checkout: str = ""
    """The user's checkout that was updated along with the ref; empty: only the ref moved."""
    message: str = ""
    hint: str = ""
