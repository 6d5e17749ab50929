"""A task's timeline as its console page groups it, from a status built here (no server), and
the bounded record of a review's context."""

from __future__ import annotations

from dataclasses import asdict

from semspec.console.task_timeline import gate_log_path, latest_gates, timeline
from semspec.workflow.context.assembler_model import AssembledContext, Section
from semspec.workflow.gates.types import GateResult
from semspec.workflow.task.messages import LogEntry, TaskStatus
from semspec.workflow.task.review_context import context_use


def gate(name: str, passed: bool = True) -> GateResult:
    return GateResult(name, "true", True, passed, 0, 1.0, False, "ok", False, 2, f"/l/{name}.log")


def gate_entry(iteration: int, name: str, log: str | None = None) -> LogEntry:
    data = {"name": name, "passed": True, "required": True}
    return LogEntry(iteration, "gate", f"{name}: pass", {**data, "log": log} if log else data)


def assembled(sops: int, dropped: int = 0) -> AssembledContext:
    section = Section("sops", tokens=10 * sops)
    section.items = [f"sop-{i}" for i in range(sops)]
    section.item_tokens = {label: 10 for label in section.items}
    section.trimmed = ["sop-1"] if sops > 1 else []
    section.dropped = [f"gone-{i}" for i in range(dropped)]
    return AssembledContext([section], "", 1000, 10 * sops)


def test_entries_are_grouped_by_iteration_and_each_gate_run_is_numbered_within_its_own() -> None:
    review = {"findings": ["a finding"], "context": asdict(context_use(assembled(2)))}
    log = [
        LogEntry(0, "budget", "fits", {"lines": ["window 32,000"]}),
        gate_entry(1, "tests", "/l/1/tests.log"),
        gate_entry(1, "lint", "/l/1/lint.log"),
        LogEntry(1, "signal", "halt from the risk monitor"),
        gate_entry(2, "tests", "/l/2/tests.log"),
        LogEntry(2, "review", "approve", review),
    ]
    status = TaskStatus("t", "", "done", 2, 0, 1, log=log, last_gates=[gate("tests")])
    view = timeline(status)
    assert [(i.number, [e.kind for e in i.entries]) for i in view.iterations] == [
        (0, ["budget"]),
        (1, ["gate", "gate", "signal"]),
        (2, ["gate", "review"]),
    ]
    first = view.iterations[1].entries
    assert [(e.gate.name, e.gate.index) for e in first[:2] if e.gate] == [("tests", 0), ("lint", 1)]
    assert first[2].risk
    assert view.last_context is not None
    assert [(i.label, i.tokens, i.trimmed) for i in view.last_context.items] == [
        ("sop-0", 10, False),
        ("sop-1", 10, True),
    ]
    assert [(g.iteration, g.index) for g in view.last_gates] == [(2, 0)]
    assert gate_log_path(status, 1, 1) == "/l/1/lint.log"
    assert gate_log_path(status, 1, 2) is None


def test_gate_runs_recorded_before_their_log_path_fall_back_to_the_latest_results() -> None:
    log = [gate_entry(1, "tests"), gate_entry(2, "tests"), gate_entry(2, "lint")]
    status = TaskStatus("t", "", "done", 2, 0, 1, log=log, last_gates=[gate("tests"), gate("lint")])
    assert gate_log_path(status, 2, 1) == "/l/lint.log"
    assert gate_log_path(status, 1, 0) is None  # an older run's log is not the latest's
    assert [(g.result.name, g.index) for g in latest_gates(status)] == [("tests", 0), ("lint", 1)]


def test_a_review_from_before_the_context_was_recorded_shows_none() -> None:
    log = [LogEntry(1, "review", "approve", {"findings": []})]
    assert timeline(TaskStatus("t", "", "done", 1, 0, 1, log=log)).last_context is None


def test_a_reviews_context_record_lists_a_bounded_number_of_items_and_counts_the_rest() -> None:
    used = context_use(assembled(70, dropped=65), most=60)
    assert len(used.items) == 60 and len(used.dropped) == 60
    assert used.unlisted == 10 + 5
    assert used.items[0].label == "sop-0" and used.dropped[0] == "sops: gone-0"
