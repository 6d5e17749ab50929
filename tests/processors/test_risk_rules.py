"""The pure rule core: thresholds, the ladder, episodes, dedupe and cross-task conflicts."""

from __future__ import annotations

from typing import get_args

from semspec.core.config.models import RiskConfig, RiskLevel
from semspec.core.reasons import RISK_LEVELS
from semspec.processors.risk_monitor.ladder import next_level
from semspec.processors.risk_monitor.rules import Step, apply_event, related_tasks
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.vocabulary.events import MonitorEvent
from semspec.vocabulary.signal_evidence import (
    ConflictEvidence,
    RetryLimitEvidence,
    ScopeCreepEvidence,
)
from tests.support.monitor_events import loop_event as event

RISK = RiskConfig()


class World:
    """Task states and the index, carried from one event to the next like the processor does."""

    def __init__(self, risk: RiskConfig = RISK) -> None:
        self.states: dict[str, TaskState] = {}
        self.index = FileIndex()
        self.risk = risk

    def feed(self, ev: MonitorEvent) -> Step:
        related = related_tasks(ev, self.index)
        step = apply_event(
            ev, {t: self.states[t] for t in related if t in self.states}, self.index, self.risk
        )
        self.states.update(step.states)
        self.index = step.index
        return step

    def levels(self, step: Step) -> list[tuple[str, str, str]]:
        return [(e.signal.task_id, e.signal.reason, e.signal.level) for e in step.emissions]


def test_retry_count_escalates_above_three_and_not_at_three() -> None:
    world = World()
    assert world.levels(world.feed(event("iteration", retries=3))) == []
    step = world.feed(event("iteration", retries=4))
    assert world.levels(step) == [("t1", "retry_limit", "escalate")]
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, RetryLimitEvidence) and evidence.retries == 4


def test_context_utilization_pauses_above_seventy_percent_and_not_at_it() -> None:
    world = World()
    assert world.levels(world.feed(event("context", utilization=0.70))) == []
    step = world.feed(event("context", utilization=0.71))
    assert world.levels(step) == [("t1", "context_pressure", "pause")]
    assert step.emissions[0].action == "pause"


def test_an_overflowing_context_window_is_pressure_not_a_percentage() -> None:
    world = World()
    step = world.feed(event("context", tokens_used=11_000, window=10_000))
    assert world.levels(step) == [("t1", "context_pressure", "pause")]


def test_context_exhaustion_warns_when_the_next_iteration_would_not_fit() -> None:
    world = World()
    fits = event("context", tokens_used=4_000, window=10_000, tokens_per_iteration=5_999)
    assert world.levels(world.feed(fits)) == []
    runs_out = event("context", tokens_used=4_000, window=10_000, tokens_per_iteration=6_000)
    assert world.levels(world.feed(runs_out)) == [("t1", "context_exhaustion", "warn")]


def test_scope_creep_flags_a_file_outside_the_task_and_not_one_inside() -> None:
    world = World()
    inside = event("files", files=["a.py"], task_files=["a.py", "b.py"])
    assert world.levels(world.feed(inside)) == []
    step = world.feed(event("files", files=["a.py", "c.py"], task_files=["a.py", "b.py"]))
    assert world.levels(step) == [("t1", "scope_creep", "warn")]
    assert step.emissions[0].action == "flag"
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, ScopeCreepEvidence) and evidence.outside == ["c.py"]


def test_scope_creep_takes_the_loops_list_so_an_added_test_is_never_flagged() -> None:
    world = World()
    with_test = event(
        "files", files=["a.py", "tests/test_a.py"], task_files=["a.py"], out_of_scope=[]
    )
    assert world.levels(world.feed(with_test)) == []
    assert world.states["t1"].touched == ["a.py", "tests/test_a.py"]  # still indexed


def test_scope_creep_flags_exactly_the_files_the_loop_reports_outside() -> None:
    world = World()
    files = ["a.py", "tests/test_a.py", "README.md"]
    step = world.feed(event("files", files=files, task_files=["a.py"], out_of_scope=["README.md"]))
    assert world.levels(step) == [("t1", "scope_creep", "warn")]
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, ScopeCreepEvidence) and evidence.outside == ["README.md"]


def test_scope_creep_climbs_only_when_a_new_file_goes_outside_the_task() -> None:
    world = World()
    first = event("files", files=["a.py", "README.md"], task_files=["a.py"])
    assert world.levels(world.feed(first)) == [("t1", "scope_creep", "warn")]
    # The next iteration's diff still holds README.md: the same creep, not a repeat of it.
    again = event("files", files=["a.py", "README.md"], task_files=["a.py"])
    assert world.levels(world.feed(again)) == []
    step = world.feed(event("files", files=["a.py", "README.md", "setup.cfg"], task_files=["a.py"]))
    assert world.levels(step) == [("t1", "scope_creep", "pause")]
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, ScopeCreepEvidence) and evidence.new == ["setup.cfg"]


def test_scope_creep_signals_again_after_a_human_answered() -> None:
    world = World()
    world.feed(event("files", files=["a.py", "README.md"], task_files=["a.py"]))
    world.feed(event("escalation", resolved=True, action="retry"))
    step = world.feed(event("files", files=["a.py", "README.md"], task_files=["a.py"]))
    assert world.levels(step) == [("t1", "scope_creep", "warn")]


def test_the_loops_escalations_count_their_fingerprints_within_the_episode() -> None:
    world = World()
    world.feed(event("escalation", fingerprint="abc"))
    world.feed(event("escalation", fingerprint="abc"))
    assert world.states["t1"].fingerprints == {"abc": 2}
    world.feed(event("escalation", resolved=True))
    assert world.states["t1"].fingerprints == {}


def test_two_active_tasks_touching_one_file_halt_both() -> None:
    world = World()
    assert world.levels(world.feed(event("files", task="a", files=["x.py"]))) == []
    second = event("files", task="b", files=["x.py", "y.py"])
    step = world.feed(second)
    assert sorted(world.levels(step)) == [
        ("a", "conflicting_changes", "halt"),
        ("b", "conflicting_changes", "halt"),
    ]
    assert {e.action for e in step.emissions} == {"halt"}
    by_task = {e.signal.task_id: e.signal.evidence for e in step.emissions}
    assert by_task["a"] == ConflictEvidence(
        event_id=second.event_id, files=["x.py"], other_tasks=["b"]
    )


def test_one_path_in_two_repositories_is_no_conflict_but_in_two_clones_it_is() -> None:
    world = World()
    world.feed(event("files", task="a", files=["calc.py"], repo="1111aaaa2222"))
    unrelated = world.feed(event("files", task="b", files=["calc.py"], repo="3333bbbb4444"))
    assert world.levels(unrelated) == []
    # Another clone of the first project has the same root commit, so it is the same project.
    clone = world.feed(event("files", task="c", files=["calc.py"], repo="1111aaaa2222"))
    assert sorted(world.levels(clone)) == [
        ("a", "conflicting_changes", "halt"),
        ("c", "conflicting_changes", "halt"),
    ]
    assert [_conflict(e.signal.evidence).files for e in clone.emissions] == [["calc.py"]] * 2


def test_a_finished_task_no_longer_conflicts() -> None:
    world = World()
    world.feed(event("files", task="a", files=["x.py"]))
    world.feed(event("finished", task="a", outcome="approved"))
    assert world.index.holders("x.py") == []
    assert world.levels(world.feed(event("files", task="b", files=["x.py"]))) == []


def test_a_repeating_signal_climbs_one_step_per_repeat_up_to_escalate() -> None:
    world = World()
    seen = [world.levels(world.feed(event("context", utilization=0.9))) for _ in range(5)]
    assert seen == [
        [("t1", "context_pressure", "pause")],
        [("t1", "context_pressure", "halt")],
        [("t1", "context_pressure", "escalate")],
        [],
        [],
    ]


def test_levels_never_go_down_within_an_episode() -> None:
    world = World()
    world.feed(event("context", utilization=0.9))
    world.feed(event("context", utilization=0.9))
    assert world.levels(world.feed(event("context", utilization=0.1))) == []
    # The next repeat continues from halt, not from the rule's pause.
    assert world.levels(world.feed(event("context", utilization=0.8))) == [
        ("t1", "context_pressure", "escalate")
    ]
    assert world.states["t1"].levels["context_pressure"] == "escalate"


def test_a_human_resolution_starts_a_new_episode_with_new_signal_ids() -> None:
    world = World()
    first = world.feed(event("iteration", retries=4)).emissions[0].signal
    assert world.feed(event("iteration", retries=5)).emissions == []
    world.feed(event("escalation", resolved=True))
    again = world.feed(event("iteration", retries=4)).emissions[0].signal
    assert again.level == "escalate" and again.signal_id != first.signal_id
    assert world.states["t1"].episode == 1


def test_an_extended_budget_raises_the_retry_threshold_by_what_was_granted() -> None:
    world = World()
    assert world.feed(event("iteration", retries=4)).emissions
    world.feed(event("escalation", resolved=True, action="extend_budget", extra_retries=3))
    # The loop restarts its count at the answer; the human accepted three more retries.
    assert world.feed(event("iteration", retries=6)).emissions == []
    step = world.feed(event("iteration", retries=7))
    assert world.levels(step) == [("t1", "retry_limit", "escalate")]
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, RetryLimitEvidence) and evidence.threshold == 6
    # A plain retry answer grants nothing more, and the allowance is kept for the task.
    world.feed(event("escalation", resolved=True, action="retry", extra_retries=9))
    assert world.feed(event("iteration", retries=6)).emissions == []
    assert world.feed(event("iteration", retries=7)).emissions
    assert world.states["t1"].retry_allowance == 3


def test_only_a_human_answer_or_the_end_of_the_task_closes_an_episode() -> None:
    world = World()
    world.feed(event("context", utilization=0.9))
    world.feed(event("iteration", retries=0))
    world.feed(event("escalation", reason="context_pressure", source="pause"))
    assert world.states["t1"].episode == 0
    world.feed(event("escalation", resolved=True, action="retry"))
    assert world.states["t1"].episode == 1
    assert world.levels(world.feed(event("context", utilization=0.9))) == [
        ("t1", "context_pressure", "pause")
    ]


def test_a_duplicate_event_changes_nothing() -> None:
    world = World()
    ev = event("iteration", retries=4)
    world.feed(ev)
    before = world.states["t1"]
    step = world.feed(ev)
    assert step.duplicate and step.emissions == [] and step.states == {}
    assert world.states["t1"] is before


def test_remembered_event_ids_are_bounded() -> None:
    world = World(RiskConfig(dedupe_ids=3))
    for _ in range(5):
        world.feed(event("iteration", retries=0))
    assert len(world.states["t1"].seen) == 3


def test_the_same_inputs_give_the_same_signal_ids() -> None:
    ev = event("iteration", retries=4)
    one = apply_event(ev, {}, FileIndex(), RISK).emissions[0].signal
    two = apply_event(ev, {}, FileIndex(), RISK).emissions[0].signal
    assert one == two


def test_published_signals_wait_in_the_outbox_of_their_task() -> None:
    world = World()
    world.feed(event("files", task="a", files=["x.py"]))
    world.feed(event("files", task="b", files=["x.py"]))
    assert [p.action for p in world.states["a"].outbox] == ["halt"]
    assert [p.signal["task_id"] for p in world.states["b"].outbox] == ["b"]


def test_log_level_rules_are_recorded_but_not_published() -> None:
    risk = RiskConfig.model_validate({"retry_count": {"threshold": 3, "level": "log"}})
    world = World(risk)
    step = world.feed(event("iteration", retries=4))
    assert [(e.signal.level, e.published) for e in step.emissions] == [("log", False)]
    assert world.states["t1"].outbox == []


def test_a_disabled_rule_never_fires() -> None:
    risk = RiskConfig.model_validate({"retry_count": {"enabled": False}})
    assert World(risk).feed(event("iteration", retries=9)).emissions == []


def test_the_ladder_starts_at_the_rule_level_and_stops_at_the_top() -> None:
    assert next_level("warn", None) == "warn"
    assert next_level("warn", "warn") == "pause"
    assert next_level("halt", "pause") == "halt"
    assert next_level("warn", "escalate") is None


def test_the_ladder_has_the_levels_of_the_config_in_order() -> None:
    assert get_args(RiskLevel) == RISK_LEVELS


def _conflict(evidence: object) -> ConflictEvidence:
    assert isinstance(evidence, ConflictEvidence)
    return evidence
