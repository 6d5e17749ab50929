"""Replay a recorded ``TaskWorkflow`` history: a non-deterministic workflow change fails here.

The history is ``tests/histories/task_workflow_all_branches.json``, written by
``python tests/histories/record.py`` (see its docstring for when to re-record).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from tests.histories.record import HISTORY_FILE, WORKFLOW_ID
from workflow.task.workflows import TaskWorkflow


def _recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(HISTORY_FILE.read_text(encoding="utf-8"))
    return data


def test_the_recorded_history_covers_every_branch_of_the_loop() -> None:
    events = _recorded()["events"]
    activities = Counter(
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    )
    assert activities["task.develop"] == 3
    assert activities["task.run_gates"] == 3
    assert activities["task.review"] == 3  # request_changes, need_more_info, approve
    assert activities["task.enrich"] == 1
    assert activities["task.commit"] == 1
    kinds = Counter(e["eventType"] for e in events)
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED"] == 1  # the human's answer
    assert kinds["EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"] == 1


async def test_the_task_workflow_replays_its_recorded_history_deterministically() -> None:
    history = WorkflowHistory.from_json(WORKFLOW_ID, _recorded())
    result = await Replayer(workflows=[TaskWorkflow]).replay_workflow(history)
    assert result.replay_failure is None
