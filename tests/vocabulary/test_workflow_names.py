"""Workflow, signal, update and query names and workflow ids keep the spelling that recorded
histories and running tasks carry (``semspec.vocabulary.workflow_names``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from semspec.vocabulary.workflow_names import (
    PLAN_WORKFLOW,
    QUERY_STATUS,
    SIGNAL_FLAG,
    SIGNAL_HALT,
    SIGNAL_PAUSE,
    TASK_SIGNALS,
    TASK_WORKFLOW,
    UPDATE_RESOLVE,
    plan_workflow_id,
    subtask_id,
    task_id_of,
    task_workflow_id,
)
from tests.histories.record import HISTORY_FILE, SIGNALS_FILE, SIGNALS_RESUMED_FILE


def _events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["events"]
    return events


def _attributes(path: Path, kind: str) -> list[dict[str, Any]]:
    return [e[kind] for e in _events(path) if kind in e]


@pytest.mark.parametrize("path", [HISTORY_FILE, SIGNALS_FILE, SIGNALS_RESUMED_FILE])
def test_the_task_workflow_type_is_the_one_its_histories_were_recorded_under(path: Path) -> None:
    started = _attributes(path, "workflowExecutionStartedEventAttributes")
    assert [a["workflowType"]["name"] for a in started] == [TASK_WORKFLOW]


def test_the_signal_and_update_names_are_those_the_recorded_histories_carry() -> None:
    signals = _attributes(SIGNALS_FILE, "workflowExecutionSignaledEventAttributes")
    assert [a["signalName"] for a in signals] == [SIGNAL_HALT, SIGNAL_PAUSE]
    for path in (HISTORY_FILE, SIGNALS_FILE):
        updates = _attributes(path, "workflowExecutionUpdateAcceptedEventAttributes")
        assert [a["acceptedRequest"]["input"]["name"] for a in updates] == [UPDATE_RESOLVE]


def test_the_names_no_history_records_keep_their_released_spelling() -> None:
    assert (PLAN_WORKFLOW, QUERY_STATUS, SIGNAL_FLAG) == ("PlanWorkflow", "status", "flag")
    assert TASK_SIGNALS == ("pause", "halt", "flag")


@pytest.mark.parametrize(
    ("task_id", "workflow_id"),
    [("fix-bug", "task-fix-bug"), ("task-7", "task-task-7"), ("a-part1", "task-a-part1")],
)
def test_a_task_workflow_id_is_task_dash_id_and_reads_back(task_id: str, workflow_id: str) -> None:
    assert task_workflow_id(task_id) == workflow_id
    assert task_id_of(workflow_id) == task_id


def test_plan_and_subtask_ids_keep_their_spelling() -> None:
    assert plan_workflow_id("release-1") == "plan-release-1"
    assert subtask_id("split-me", 2) == "split-me-part2"
    assert task_workflow_id(subtask_id("split-me", 2)) == "task-split-me-part2"
