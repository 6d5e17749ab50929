"""Where a land left its task, as ``task status``, ``task list`` and the console show it, and the
memo a land's workflow keeps it in so lists read it from Temporal's visibility (issue 31: one
list call per page, no question per task).

The shape is ``land_client.land_state``'s: ``{"state": "landed", "commit": ...}`` or ``{"state":
"land failed", "reason": <outcome>, "message": ...}``. Plain data: the workflow and the clients
share it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semspec.workflow.land.landing import LandResult

LAND_MEMO = "land"
"""Memo key of a ``LandWorkflow`` run's end state."""
MESSAGE_CHARS = 500
"""A message is cut here: a memo is sent with every page of a list."""
NOT_FINISHED = "the land did not finish"
"""Why a land run that failed, was cancelled or timed out left its task not landed."""


def land_state_of(result: LandResult) -> dict[str, str]:
    """The land state a finished land leaves: landed with the base's new commit, or failed
    with the outcome as the reason and the land's message."""
    from semspec.workflow.land.landing import ALREADY_LANDED, LANDED

    if result.outcome in (LANDED, ALREADY_LANDED):
        return {"state": "landed", "commit": result.commit}
    message = result.message[:MESSAGE_CHARS]
    return {"state": "land failed", "reason": result.outcome, "message": message}


def land_from_memo(raw: Any) -> dict[str, str] | None:
    """``raw`` (a memo's JSON) as a land state; None unless it has that shape (a memo of
    another shape gives no state rather than an error)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("state"), str):
        return None
    return {key: value for key, value in raw.items() if isinstance(value, str)}
