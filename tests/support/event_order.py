"""What order a task's loop events on the stream promise (docs/operations.md, "Loop events
never dropped"), checked from their kinds in arrival order.

The loop's own events (``iteration``, ``escalation``, ``finished``) keep the order the loop made
them in. A step's events (``files``, ``gate``, ``context``, ``review``) keep the steps' order
and are never behind anything the loop queued after their step, but may go ahead of the
``iteration`` event of their turn. ``finished`` is last. Agents' ``step`` events are left out.
"""

from __future__ import annotations

from collections.abc import Sequence

LOOP_OWN = ("iteration", "escalation", "finished")


def check_one_turn(kinds: Sequence[str], step_kinds: Sequence[str]) -> None:
    """Assert ``kinds`` are one approved turn: one ``iteration``, then or before it the step
    events ``step_kinds`` in that order, each once, and ``finished`` last."""
    shown = [kind for kind in kinds if kind != "step"]
    assert shown.count("iteration") == 1, shown
    assert [kind for kind in shown if kind in LOOP_OWN] == ["iteration", "finished"], shown
    assert [kind for kind in shown if kind not in LOOP_OWN] == list(step_kinds), shown
    assert shown[-1] == "finished", shown
