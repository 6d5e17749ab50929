"""Replay recorded ``TaskWorkflow`` histories: a non-deterministic workflow change fails here.

The histories in ``tests/histories/`` are written by ``python tests/histories/record.py`` (see its
docstring for what each covers and when to re-record): every branch of the loop, and risk signals
that cancel running steps, in two runs; a task that lands itself, conflicts, and lands after a
retry. Under ADR 0007 they are recorded by the current minor
version: they hold only the markers of patches still in force (``semspec.workflow.patches``).
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from semspec.workflow.patches import PATCHES
from semspec.workflow.task.workflows import TaskWorkflow
from tests.histories.record import (
    HISTORY_FILE,
    LAND_FILE,
    LAND_WORKFLOW_ID,
    SIGNALS_FILE,
    SIGNALS_RESUMED_FILE,
    SIGNALS_WORKFLOW_ID,
    WORKFLOW_ID,
)

HISTORIES = [HISTORY_FILE, SIGNALS_FILE, SIGNALS_RESUMED_FILE, LAND_FILE]


def _recorded(path: Path = HISTORY_FILE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _patch_id(marker: dict[str, Any]) -> str:
    """The patch id a ``workflow.patched`` marker records."""
    (payload,) = marker["details"]["patch-data"]["payloads"]
    data: dict[str, Any] = json.loads(base64.b64decode(payload["data"]))
    return str(data["id"])


def _activities(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    )


def test_the_recorded_history_covers_every_branch_of_the_loop() -> None:
    events = _recorded()["events"]
    activities = _activities(events)
    assert activities["task.develop"] == 3
    assert activities["task.run_gates"] == 3
    assert activities["task.review"] == 3  # request_changes, need_more_info, approve
    assert activities["task.enrich"] == 1
    assert activities["task.commit"] == 1
    assert activities["task.check_owner"] == 1  # every run checks its owner first
    assert activities["task.publish_events"] >= 1  # loop events through the outbox
    kinds = Counter(e["eventType"] for e in events)
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED"] == 1  # the human's answer
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"] == 1


def test_the_signals_history_cancels_two_running_gates_and_continues_as_new() -> None:
    events = _recorded(SIGNALS_FILE)["events"]
    kinds = Counter(e["eventType"] for e in events)
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"] == 2  # halt, then pause
    assert kinds["EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED"] == 2
    assert kinds["EVENT_TYPE_ACTIVITY_TASK_CANCELED"] == 2
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED"] == 1  # the human's retry
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"] == 1
    activities = _activities(events)
    assert (activities["task.run_gates"], activities["task.checkpoint"]) == (2, 1)
    assert activities["task.sign_start"] == 1  # the worker signs the continued run
    resumed = _activities(_recorded(SIGNALS_RESUMED_FILE)["events"])
    assert (resumed["task.review"], resumed["task.commit"]) == (1, 1)


def test_the_land_auto_history_lands_escalates_starts_again_on_the_base_and_lands() -> None:
    events = _recorded(LAND_FILE)["events"]
    activities = _activities(events)
    assert activities["land.run"] == 2  # a conflict, then a fast-forward
    assert activities["task.restart_on_base"] == 1  # the human's retry
    assert (activities["task.develop"], activities["task.commit"]) == (2, 2)
    kinds = Counter(e["eventType"] for e in events)
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED"] == 1
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"] == 1


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
def test_the_histories_hold_only_markers_of_patches_in_force(path: Path) -> None:
    # ADR 0007: a history recorded with a removed patch's marker is from an older minor version
    # and must be recorded again (``python tests/histories/record.py``).
    patches = [
        _patch_id(e["markerRecordedEventAttributes"])
        for e in _recorded(path)["events"]
        if e.get("markerRecordedEventAttributes", {}).get("markerName") == "core_patch"
    ]
    assert [p for p in patches if p not in PATCHES] == []


@pytest.mark.parametrize(
    ("workflow_id", "path"),
    [
        (WORKFLOW_ID, HISTORY_FILE),
        (SIGNALS_WORKFLOW_ID, SIGNALS_FILE),
        (SIGNALS_WORKFLOW_ID, SIGNALS_RESUMED_FILE),
        (LAND_WORKFLOW_ID, LAND_FILE),
    ],
    ids=["all-branches", "signals", "signals-resumed", "land-auto"],
)
async def test_the_task_workflow_replays_its_recorded_history_deterministically(
    workflow_id: str, path: Path
) -> None:
    history = WorkflowHistory.from_json(workflow_id, _recorded(path))
    result = await Replayer(workflows=[TaskWorkflow]).replay_workflow(history)
    assert result.replay_failure is None
