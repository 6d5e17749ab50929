"""How the demo judges its four steps from what a run recorded, without any services."""

from __future__ import annotations

import pytest

from semspec.agents.protocol import Finding
from semspec.demo.knowledge import KnowledgeRecord, SopRecord
from semspec.demo.narrate import MARK, callouts
from semspec.demo.steps import judge_steps
from semspec.demo.summary import EscalationRecord, TaskRecord
from semspec.workflow.task.messages import LogEntry, ReviewStep, TaskStatus

SOP = "calc-functions"
FLAG = "flag (warn): scope_creep task t1: touched files outside the task: README.md → warn"
CHECKPOINT = "context red at 83%: semspec/checkpoint/t1/1 at 0123456789"


def _knowledge(in_reviewer_context: bool = True) -> KnowledgeRecord:
    sop = SopRecord(SOP, "error", ["**/*.py"], ["Document it."], in_reviewer_context, True)
    return KnowledgeRecord(sops=[sop], task_files=["calc.py"])


def _status(log: list[LogEntry], verdict: ReviewStep | None, outcome: str | None) -> TaskStatus:
    return TaskStatus(
        task_id="t1",
        title="Add sub",
        phase="done",
        iteration=3,
        retries=0,
        max_retries=3,
        outcome=outcome,
        last_verdict=verdict,
        flags=[f"scope_creep: {FLAG}"] if any(e.kind == "signal" for e in log) else [],
        log=log,
    )


def _first_task(
    flag: bool = True, cite: bool = True, checkpoint: str | None = CHECKPOINT
) -> TaskRecord:
    """Task 1 as the demo records it: a poll after the first review, then the final status."""
    log = [LogEntry(1, "signal", FLAG)] if flag else []
    log += [LogEntry(1, "developer", "submitted"), LogEntry(1, "review", "request_changes by r")]
    finding = Finding("sub has no docstring", sop_id=SOP if cite else None)
    record = TaskRecord("sub", "t1", "Add sub", "starting")
    first_review = ReviewStep("request_changes", "", [finding], "r")
    record.note_citations(_status(log, first_review, None))
    if checkpoint is not None:
        log += [LogEntry(2, "checkpoint", checkpoint), LogEntry(2, "resumed", "fresh context")]
    log += [LogEntry(3, "review", "approve by r")]
    record.update_from(_status(log, None, "approved"))
    return record


def _second_task(answered: bool = True) -> TaskRecord:
    record = TaskRecord("mul", "t2", "Add mul", "approved" if answered else "escalated")
    escalation = EscalationRecord("t2-1", "no_new_evidence", "same", 2, "f" * 64)
    escalation.resolution = "retry" if answered else None
    record.escalations.append(escalation)
    return record


def _shown(knowledge: KnowledgeRecord, tasks: list[TaskRecord], yes: bool = True) -> list[int]:
    return [s.number for s in judge_steps(knowledge, tasks, yes) if s.shown]


def test_a_run_that_recorded_everything_shows_all_four_steps() -> None:
    assert _shown(_knowledge(), [_first_task(), _second_task()]) == [1, 2, 3, 4]


def test_without_yes_an_escalation_left_waiting_still_shows_step_three() -> None:
    tasks = [_first_task(), _second_task(answered=False)]
    assert _shown(_knowledge(), tasks, yes=False) == [1, 2, 3, 4]
    assert _shown(_knowledge(), tasks, yes=True) == [1, 2, 4]


@pytest.mark.parametrize(
    ("knowledge", "first", "second", "missing"),
    [
        (_knowledge(in_reviewer_context=False), _first_task(), _second_task(), 1),
        (_knowledge(), _first_task(cite=False), _second_task(), 1),
        (_knowledge(), _first_task(flag=False), _second_task(), 2),
        (_knowledge(), _first_task(), _second_task(answered=False), 3),
        (_knowledge(), _first_task(checkpoint=None), _second_task(), 4),
        (_knowledge(), _first_task(checkpoint="pause (scope_creep): x at 0"), _second_task(), 4),
    ],
    ids=[
        "sop-not-in-context",
        "sop-not-cited",
        "no-flag",
        "escalation-unanswered",
        "no-checkpoint",
        "checkpoint-not-from-pressure",
    ],
)
def test_a_step_the_run_did_not_record_is_not_claimed(
    knowledge: KnowledgeRecord, first: TaskRecord, second: TaskRecord, missing: int
) -> None:
    shown = _shown(knowledge, [first, second])
    assert missing not in shown
    assert len(shown) == 3


def test_a_flag_that_arrives_after_the_last_review_does_not_count() -> None:
    record = _first_task(flag=False)
    late = [LogEntry(1, "review", "request_changes by r"), LogEntry(1, "signal", FLAG)]
    record.update_from(_status(late, None, "approved"))
    assert record.reviews_after_flag == []
    assert 2 not in _shown(_knowledge(), [record, _second_task()])


def test_a_citation_is_recorded_once_however_often_it_is_polled() -> None:
    log = [LogEntry(1, "review", "request_changes by r")]
    verdict = ReviewStep("request_changes", "", [Finding("m", sop_id=SOP)], "r")
    record = TaskRecord("sub", "t1", "Add sub", "starting")
    assert len(record.note_citations(_status(log, verdict, None))) == 1
    assert record.note_citations(_status(log, verdict, None)) == []
    assert [(c.iteration, c.sop_id) for c in record.sop_citations] == [(1, SOP)]


def test_the_lines_that_show_a_step_are_called_out_as_they_come() -> None:
    record = _first_task()
    lines = {
        kind: callouts(LogEntry(it, kind, message), record)
        for it, kind, message in [
            (1, "signal", FLAG),
            (1, "review", "request_changes by r"),
            (2, "checkpoint", CHECKPOINT),
            (2, "escalation", "no_new_evidence: required gate failed"),
            (1, "gate", "test: pass"),
        ]
    }
    assert [len(lines[k]) for k in ("signal", "review", "checkpoint", "escalation", "gate")] == [
        1,
        2,  # the SOP citation and the flag the call carried
        1,
        1,
        0,
    ]
    assert all(
        line.strip().startswith(f"{MARK} step") for group in lines.values() for line in group
    )
