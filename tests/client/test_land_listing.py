"""How a list row's land cell is chosen and worded (``client/land_listing.py``,
``client/land_text.py``), without a server: the stack scenario is
``tests/scenarios/test_land_state_in_lists.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from semspec.client.land_listing import land_query, listed_land, listed_waits
from semspec.client.land_text import list_cell, status_line
from semspec.workflow.land.land_memo import land_from_memo, land_state_of
from semspec.workflow.land.landing import LandResult
from semspec.workflow.task.listing import TaskListing

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class NewerListing:
    """A listing of the shape the loop keeps once it lands and waits by itself."""

    land: dict[str, str] | None = None
    waiting_on: list[str] = field(default_factory=list)


def test_the_list_cell_says_approved_queued_landed_or_failed_with_the_reason() -> None:
    assert list_cell({"state": "approved"}, []) == "approved (not landed)"
    assert list_cell({"state": "queued"}, []) == "queued"
    assert list_cell({"state": "landed", "commit": COMMIT}, []) == "landed 0123456789ab"
    failed = {"state": "land failed", "reason": "land_conflict", "message": "conflicts in a.py"}
    assert list_cell(failed, []) == "land failed land_conflict"
    assert list_cell(None, []) == ""


def test_the_list_cell_names_the_tasks_a_task_waits_on() -> None:
    assert list_cell(None, ["t1"]) == "waiting on t1"
    assert list_cell({"state": "approved"}, ["t1", "t2"]) == (
        "waiting on t1, t2; approved (not landed)"
    )


def test_an_approved_task_without_a_land_is_approved_and_others_have_no_land_state() -> None:
    lands = {"b": {"state": "queued"}}
    assert listed_land("a", True, TaskListing(), lands) == {"state": "approved"}
    assert listed_land("b", True, TaskListing(), lands) == {"state": "queued"}
    assert listed_land("b", False, TaskListing(), lands) is None
    assert listed_land("a", True, None, {}) == {"state": "approved"}


def test_the_tasks_own_land_state_wins_and_is_read_defensively() -> None:
    own = NewerListing(land={"state": "landed", "commit": COMMIT, "odd": 3})  # type: ignore[dict-item]
    lands = {"a": {"state": "queued"}}
    assert listed_land("a", True, own, lands) == {"state": "landed", "commit": COMMIT}
    assert listed_land("a", True, NewerListing(land={"no": "state"}), lands) == {"state": "queued"}
    assert listed_waits(NewerListing(waiting_on=["t1", 2, "t2"])) == ["t1", "t2"]  # type: ignore[list-item]
    assert listed_waits(TaskListing()) == []
    assert listed_waits(None) == []


def test_a_finished_land_keeps_what_task_status_says_in_its_memo() -> None:
    landed = land_state_of(LandResult("landed", method="rebase", commit=COMMIT))
    assert landed == {"state": "landed", "commit": COMMIT}
    assert land_state_of(LandResult("already_landed", commit=COMMIT)) == landed
    failed = land_state_of(LandResult("land_gate_failed", message="gate tests failed" * 100))
    assert (failed["state"], failed["reason"]) == ("land failed", "land_gate_failed")
    assert len(failed["message"]) == 500
    assert land_from_memo(failed) == failed
    assert land_from_memo({"state": 1}) is None
    assert land_from_memo("landed") is None
    assert status_line("t", landed) == "landed 0123456789ab"


def test_the_land_query_bounds_the_start_time_in_utc_whole_seconds() -> None:
    since = datetime(2026, 11, 27, 16, 5, 9, 700_000, tzinfo=timezone(timedelta(hours=1)))
    assert land_query(since) == (
        "WorkflowType = 'LandWorkflow' AND ExecutionStatus != 'ContinuedAsNew' "
        "AND StartTime >= '2026-11-27T15:05:09Z'"
    )
    assert "StartTime" not in land_query(None)
