"""The monitor's rules next to the loop's own escalations: a human is asked once per episode."""

from __future__ import annotations

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.rules import apply_event
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.vocabulary.events import MonitorEvent
from tests.support.monitor_events import loop_event as event

RISK = RiskConfig()


class Task:
    """One task's monitor state, carried from event to event as the processor does."""

    def __init__(self) -> None:
        self.state: TaskState | None = None

    def feed(self, ev: MonitorEvent) -> list[tuple[str, str]]:
        states = {"t1": self.state} if self.state else {}
        step = apply_event(ev, states, FileIndex(), RISK)
        self.state = step.states["t1"]
        return [(e.signal.reason, e.signal.level) for e in step.emissions]


def test_a_loop_escalation_over_retries_raises_no_second_escalation_from_the_monitor() -> None:
    task = Task()
    loop_escalation = event(
        "escalation", reason="budget_exhausted", retries=4, fingerprint="f1", escalation_id="t1-1"
    )
    assert task.feed(loop_escalation) == []
    assert task.feed(event("iteration", retries=5)) == []


def test_a_loop_escalation_marks_a_repeated_fingerprint_as_already_escalated() -> None:
    task = Task()
    task.feed(event("escalation", reason="no_new_evidence", fingerprint="f1", escalation_id="t1-1"))
    again = event("escalation", reason="no_new_evidence", fingerprint="f1", escalation_id="t1-2")
    assert task.feed(again) == []


def test_after_a_human_answers_the_monitor_may_escalate_retries_again() -> None:
    task = Task()
    task.feed(event("escalation", reason="budget_exhausted", retries=4, escalation_id="t1-1"))
    task.feed(event("escalation", resolved=True, action="retry", escalation_id="t1-1"))
    assert task.feed(event("iteration", retries=4)) == [("retry_limit", "escalate")]


def test_a_loop_escalation_leaves_other_rules_free_to_signal() -> None:
    task = Task()
    task.feed(event("escalation", reason="budget_exhausted", retries=4, escalation_id="t1-1"))
    assert task.feed(event("context", utilization=0.9)) == [("context_pressure", "pause")]
