"""The console's rows and timeline as issue 30 asks (items 2, 5 and 6), rendered without a
server: the live feed sets a board row's retries and cost as the served row words them, and the
timeline gives each entry the time the loop wrote it."""

from __future__ import annotations

from semspec.console.live import row_fields
from semspec.vocabulary.event_payloads import (
    EscalationRaised,
    FinishedPayload,
    IterationPayload,
)
from semspec.workflow.task.messages import LogEntry, TaskStatus
from tests.support.task_page import render_task

AT = "2026-11-27T11:54:59+00:00"


def test_the_live_feed_gives_retries_as_used_of_allowed() -> None:
    fields = row_fields(IterationPayload(phase="developer", retries=1, max_retries=3))
    assert fields["retries"] == "1/3"
    raised = EscalationRaised(
        reason="budget_exhausted",
        retries=4,
        fingerprint=None,
        question="?",
        source="loop",
        escalation_id="t-1",
        max_retries=3,
    )
    assert row_fields(raised)["retries"] == "3/3"  # never more used than allowed


def test_an_event_of_an_older_loop_leaves_the_served_retries_alone() -> None:
    assert "retries" not in row_fields(IterationPayload(phase="developer", retries=1))


def test_the_live_feed_words_cost_as_the_task_page_and_never_as_zero_dollars() -> None:
    unpriced = IterationPayload(phase="developer", retries=0, unpriced_models=["openai:m"])
    assert row_fields(unpriced)["cost"] == "unpriced (model openai:m)"
    priced = FinishedPayload(outcome="approved", commit="c", reason=None, cost_usd=0.0012)
    assert row_fields(priced)["cost"] == "$0.0012"
    both = FinishedPayload(
        outcome="approved", commit="c", reason=None, cost_usd=2.5, unpriced_models=["x:y"]
    )
    assert row_fields(both)["cost"] == "$2.50 + unpriced (model x:y)"
    # Nothing counted yet: the cell keeps what it shows instead of reading $0.0000.
    assert "cost" not in row_fields(IterationPayload(phase="developer", retries=0))


def test_each_timeline_entry_shows_when_the_loop_wrote_it() -> None:
    log = [
        LogEntry(0, "workspace", "worktree on semspec/t1", {"at": AT}),
        LogEntry(1, "developer", "changed 1 file"),  # a task run before entries had times
    ]
    html = render_task(TaskStatus("t1", "title", "developer", 1, 0, 3, log=log))
    workspace = html[html.index('data-kind="workspace"') :]
    assert workspace.index('<time datetime="2026-11-27T11:54:59+00:00"') < workspace.index(
        "<strong>workspace"
    )
    assert 'title="2026-11-27 11:54:59 UTC"' in workspace
    developer = html[html.index('data-kind="developer"') :]
    assert "<time" not in developer[: developer.index("</li>")]


def test_the_task_page_never_shows_more_retries_used_than_allowed() -> None:
    html = render_task(TaskStatus("t1", "title", "escalated", 4, 4, 3))
    assert '<dd data-field="retries">3 of 3</dd>' in html
