"""Gate checks: mechanical pass/fail shell commands run in the task's worktree (ADR-004 layer 1).

``resolve_gates`` turns the ``gates`` config section into ``GateSpec`` s; ``run_gates`` runs them
and returns a ``GateReport`` whose text goes back to the developer or on to the reviewer.
"""

from semspec.workflow.gates.presets import DEFAULT_PRESETS_DIR, load_preset, resolve_gates
from semspec.workflow.gates.runner import GateFencing, run_gate, run_gates
from semspec.workflow.gates.types import GateReport, GateResult, GateSpec

__all__ = [
    "DEFAULT_PRESETS_DIR",
    "GateFencing",
    "GateReport",
    "GateResult",
    "GateSpec",
    "load_preset",
    "resolve_gates",
    "run_gate",
    "run_gates",
]
