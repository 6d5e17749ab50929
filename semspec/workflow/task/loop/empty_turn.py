"""A developer turn that leaves the worktree as it found it is not a submission.

An agent CLI whose edits were all denied, or whose own sandbox failed every command, still exits
0 and says it is done; gates pass on the unchanged code and a reviewer may approve it, so the
task would be reported as committed with no commit made (issue 24). The loop sends such a turn
back to the developer once, saying so; a second one in a row escalates ``no_change``. Pure: the
workflow keeps the count and acts on the answer.
"""

from __future__ import annotations

from semspec.core.reasons import FallbackReason
from semspec.workflow.task.loop.bounds import Escalate

NO_CHANGE_FEEDBACK = (
    "Your last turn changed no file in the worktree, so nothing was submitted. Make the change "
    "the task asks for by editing the files in the current directory (if your tools were "
    "refused, say which), then finish."
)
EMPTY_TURNS_SENT_BACK = 1
"""Empty turns in a row that go back to the developer before a human is asked."""


def after_empty_turn(empty_turns: int, agent_summary: str) -> Escalate | None:
    """What follows the ``empty_turns``-th empty turn in a row: None (back to the developer
    with ``NO_CHANGE_FEEDBACK``) or the escalation."""
    if empty_turns <= EMPTY_TURNS_SENT_BACK:
        return None
    said = f"; it said: {agent_summary.strip()[:300]}" if agent_summary.strip() else ""
    return Escalate(
        FallbackReason.NO_CHANGE,
        f"the developer changed no file in {empty_turns} turns in a row{said}",
    )
