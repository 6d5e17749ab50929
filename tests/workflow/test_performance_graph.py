"""Model performance history in the graph: idempotent per task, and it steers assignment."""

from __future__ import annotations

from semspec.graph.store import GraphStore
from semspec.model.performance import TaskOutcome
from semspec.model.registry import load_registry
from semspec.workflow.assignment import explain_assignment
from semspec.workflow.performance_graph import GraphPerformanceHistory


def test_recording_the_same_task_twice_counts_it_once(store: GraphStore) -> None:
    history = GraphPerformanceHistory(store)
    outcome = TaskOutcome(approved=True, iterations=2, tokens=900, latency_s=3.5)
    history.record_task("t1", "gpt-4o", "developer", outcome)
    history.record_task("t1", "gpt-4o", "developer", outcome)  # an activity retry
    history.record_task("t2", "gpt-4o", "developer", TaskOutcome(False, 5, 4000, 9.0))
    stats = history.stats("gpt-4o", "developer")
    assert (stats.tasks, stats.approved, stats.iterations, stats.approved_tokens) == (2, 1, 7, 900)
    assert history.stats("gpt-4o", "reviewer").tasks == 0


def test_recorded_failures_of_the_first_choice_change_the_assignment(store: GraphStore) -> None:
    registry = load_registry()
    models = [m for m in registry if m.provider != "scripted"]
    history = GraphPerformanceHistory(store)
    first = explain_assignment(models, "developer", 2_000, history).chosen
    assert first is not None
    for n in range(4):
        history.record_task(f"fail-{n}", first, "developer", TaskOutcome(False, 6, 9000, 60.0))
    second = explain_assignment(models, "developer", 2_000, history).chosen
    assert second is not None and second != first
