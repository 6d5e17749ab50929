"""The states and outcomes ``task list`` shows and ``--state`` takes.

Kept apart from ``task_client`` (which needs the Temporal client) so the CLI can name them in
its help without importing Temporal.
"""

from __future__ import annotations

from semspec.core.errors import InputError

TASK_STATES: tuple[str, ...] = (
    "running",
    "escalated",
    "completed",
    "failed",
    "cancelled",
    "terminated",
    "timed_out",
)
"""What ``task list`` shows in its state column (``--state`` also takes an outcome)."""
TASK_OUTCOMES: tuple[str, ...] = ("approved", "aborted", "refused")
"""Outcomes of a completed workflow; all but ``approved`` list as ``failed``."""
LIST_LIMIT = 50
"""Tasks ``task list`` shows unless told otherwise (``--limit``, ``--all``)."""
TEMPORAL_SPELLING = {"canceled": "cancelled"}
"""Temporal's spelling of a state, where it differs from ours."""


def check_state(state: str | None) -> str | None:
    """``--state`` normalised (``canceled`` is ``cancelled``); anything unknown is an error."""
    if state is None:
        return None
    value = TEMPORAL_SPELLING.get(state.strip().lower(), state.strip().lower())
    if value not in TASK_STATES + TASK_OUTCOMES:
        raise InputError(
            f"--state {state!r} is not a task state",
            hint=f"use one of: {', '.join(TASK_STATES + TASK_OUTCOMES)}",
        )
    return value
