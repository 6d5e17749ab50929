"""The step rules on the pure rule function: each fires at its threshold and not before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from semspec.core.config.models import RiskConfig, StepRule, StepRulesConfig
from semspec.processors.risk_monitor.rules import Step, apply_event
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.vocabulary.events import MonitorEvent, UserSignal, monitor_event
from semspec.vocabulary.signal_evidence import StepPatternEvidence
from tests.support.monitor_events import loop_event

RISK = RiskConfig()


class Turns:
    """One task's steps fed to ``apply_event`` one by one, numbered as an agent numbers them."""

    def __init__(self, risk: RiskConfig = RISK) -> None:
        self.state: TaskState | None = None
        self.risk = risk
        self.number = 0
        self.iteration = 1
        self.run = ""

    def feed(self, ev: MonitorEvent) -> Step:
        states = {"t1": self.state} if self.state else {}
        step = apply_event(ev, states, FileIndex(), self.risk)
        self.state = step.states.get("t1", self.state)
        return step

    def step(self, kind: str = "tool", **data: Any) -> Step:
        """The agent's next step; ``action``/``output`` name its hashes."""
        self.number += 1
        fields: dict[str, Any] = {
            "step": self.number,
            "kind": kind,
            "tool": data.pop("tool", "bash" if kind == "tool" else None),
            "action_hash": data.pop("action", "act"),
            "observation_hash": data.pop("output", "out"),
            "error": data.pop("error", False),
            "role": "developer",
            **data,
        }
        return self.feed(
            monitor_event(
                "step",
                fields,
                event_id=f"step-{self.iteration}-{self.number}{self.run}",
                task_id="t1",
                run_id="run",
                iteration=self.iteration,
            )
        )

    def call(self, action: str, output: str, **data: Any) -> Step:
        """A model step asking for ``action``, then the tool step answering ``output``."""
        self.step("model", action=action, output="thinking")
        return self.step(action=action, output=output, **data)

    def new_turn(self) -> None:
        self.iteration += 1
        self.number = 0

    def fresh_run(self) -> None:
        """The run a pause continues in: the same iteration, its steps numbered from 1 again."""
        self.number = 0
        self.run += "'"


def fired(step: Step) -> list[tuple[str, str]]:
    return [(e.signal.reason, e.signal.level) for e in step.emissions]


def calls_until_fired(turns: Turns, calls: list[tuple[str, str]], **data: Any) -> list[int]:
    """The 1-based positions of the calls at which a rule fired."""
    return [n for n, (a, o) in enumerate(calls, 1) if fired(turns.call(a, o, **data))]


def test_the_same_call_with_the_same_output_pauses_at_the_fourth_call_and_not_before() -> None:
    turns = Turns()
    for _ in range(3):
        assert fired(turns.call("ls", "a.py")) == []
    step = turns.call("ls", "a.py")
    assert fired(step) == [("repeated_action", "pause")]
    assert step.emissions[0].action == "pause" and step.emissions[0].published


def test_a_reply_without_a_tool_call_between_repeats_does_not_reset_their_count() -> None:
    # mini-swe-agent's format-error turn: the model answered, asked for nothing, got a nudge.
    turns = Turns()
    for _ in range(3):
        assert fired(turns.call("sed -i s/a/a/ f.py", "")) == []
    assert fired(turns.step("model", action="", output="I am typing the same thing")) == []
    assert fired(turns.call("sed -i s/a/a/ f.py", "")) == [("repeated_action", "pause")]


def test_a_failing_call_repeated_across_replies_without_a_tool_call_still_counts() -> None:
    turns = Turns()
    assert fired(turns.call("pytest", "E boom", error=True)) == []
    turns.step("model", action="", output="found 2 actions")
    assert fired(turns.call("pytest", "E boom", error=True)) == []
    turns.step("model", action="", output="found 3 actions")
    assert fired(turns.call("pytest", "E boom", error=True)) == [("repeated_failure", "pause")]


def test_the_same_call_failing_the_same_way_pauses_at_the_third_call_and_not_before() -> None:
    turns = Turns()
    for _ in range(2):
        assert fired(turns.call("pytest", "E boom", error=True)) == []
    assert fired(turns.call("pytest", "E boom", error=True)) == [("repeated_failure", "pause")]


def test_model_calls_asking_for_no_tool_pause_at_the_third_and_not_before() -> None:
    turns = Turns()
    assert fired(turns.step("model", action="", output="I think")) == []
    assert fired(turns.step("model", action="", output="Hmm")) == []
    step = turns.step("model", action="", output="So")
    assert fired(step) == [("no_tool_call", "pause")]


def test_a_reviewer_answering_in_text_is_not_silent_however_often_it_retries() -> None:
    turns = Turns()
    for n in range(6):
        step = turns.step("model", action="", output=f"not json {n}", role="reviewer")
        assert fired(step) == []


def test_a_tool_call_between_silent_model_calls_starts_the_count_again() -> None:
    turns = Turns()
    turns.step("model", action="", output="I think")
    turns.step("model", action="", output="Hmm")
    turns.call("ls", "a.py")
    assert fired(turns.step("model", action="", output="So")) == []


def test_two_calls_alternating_with_the_same_outputs_pause_at_the_sixth_and_not_before() -> None:
    turns = Turns()
    calls = [("edit", "ok"), ("test", "1 failed")] * 4
    assert calls_until_fired(turns, calls) == [6]
    assert turns.state is not None and turns.state.levels == {"alternating_actions": "pause"}


def test_context_window_errors_pause_at_the_second_even_in_another_turn() -> None:
    turns = Turns()
    overflow = {"action": "", "output": "too long", "error": True, "error_kind": "context_window"}
    assert fired(turns.step("model", **overflow)) == []
    turns.new_turn()
    step = turns.step("model", **overflow)
    assert fired(step) == [("context_window_errors", "pause")]
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, StepPatternEvidence)
    assert evidence.steps == ["step-1-1", "step-2-1"]


def test_polling_the_same_command_with_changing_output_never_fires() -> None:
    turns = Turns()
    calls = [("ci status", f"running {n}/20") for n in range(20)] + [("ci status", "done")]
    assert calls_until_fired(turns, calls) == []


def test_a_retry_that_fails_differently_each_time_never_fires() -> None:
    turns = Turns()
    calls = [("pytest", f"{n} failed") for n in range(10, 0, -1)]
    assert calls_until_fired(turns, calls, error=True) == []


def test_steps_marked_wait_never_fire_however_often_they_repeat() -> None:
    turns = Turns()
    calls = [("sleep 30", "")] * 12
    assert calls_until_fired(turns, calls, wait=True) == []


def test_a_tool_listed_in_wait_tools_never_fires() -> None:
    risk = RiskConfig(steps=StepRulesConfig(wait_tools=["wait_for_ci"]))
    turns = Turns(risk)
    calls = [("wait ci", "pending")] * 12
    assert calls_until_fired(turns, calls, tool="wait_for_ci") == []


def test_a_check_repeated_after_each_wait_is_polling_and_never_fires() -> None:
    turns = Turns()
    for _ in range(12):
        assert fired(turns.call("sleep 5", "", wait=True)) == []
        assert fired(turns.call("curl :8000", "connection refused", error=True)) == []


def test_the_same_calls_in_separate_turns_are_not_a_pattern() -> None:
    turns = Turns()
    for _ in range(4):
        turns.new_turn()
        for name in ("read a.py", "read b.py"):
            assert fired(turns.call(name, "same text")) == []


def test_the_paused_turns_late_repeats_never_climb_past_the_pause() -> None:
    turns = Turns()
    # A fast agent takes many steps while the pause reaches it (issue 24): they stay a pause.
    levels = [fired(turns.call("pytest", "E boom", error=True)) for _ in range(12)]
    assert levels == [[], [], [("repeated_failure", "pause")], *[[]] * 9]
    for _ in range(3):
        assert fired(turns.step("model", action="")) == []  # silence after the pause too
    assert turns.state is not None and turns.state.levels == {"repeated_failure": "pause"}


def test_a_fresh_run_after_the_pause_that_loops_again_halts_after_a_whole_new_run() -> None:
    turns = Turns()
    for _ in range(5):
        turns.call("pytest", "E boom", error=True)
    turns.fresh_run()
    levels = [fired(turns.call("pytest", "E boom", error=True)) for _ in range(3)]
    assert levels == [[], [], [("repeated_failure", "halt")]]


def test_a_new_iteration_that_loops_again_halts_and_its_late_steps_climb_on() -> None:
    turns = Turns()
    for _ in range(4):
        turns.call("ls", "a.py")
    turns.new_turn()
    levels = [fired(turns.call("ls", "a.py")) for _ in range(8)]
    # Only a pause holds its turn back: past a halt the same turn still climbs.
    assert levels == [
        [],
        [],
        [],
        [("repeated_action", "halt")],
        [],
        [],
        [],
        [("repeated_action", "escalate")],
    ]


def test_a_humans_answer_during_the_paused_turn_lets_its_steps_count_again() -> None:
    turns = Turns()
    for _ in range(4):
        turns.call("ls", "a.py")
    turns.feed(loop_event("escalation", resolved=True))
    levels = [fired(turns.call("ls", "a.py")) for _ in range(4)]
    assert levels == [[], [], [], [("repeated_action", "pause")]]


def test_a_conflict_still_halts_a_paused_task_at_once() -> None:
    turns = Turns()
    for _ in range(4):
        turns.call("ls", "a.py")
    assert turns.state is not None
    other = apply_event(loop_event("files", "t2", files=["a.py"]), {}, FileIndex(), RISK)
    step = apply_event(
        loop_event("files", "t1", files=["a.py"]),
        {"t1": turns.state, **other.states},
        other.index,
        RISK,
    )
    assert sorted(fired(step)) == [("conflicting_changes", "halt")] * 2


def test_the_evidence_names_each_step_and_the_repeated_tool() -> None:
    turns = Turns()
    steps = [turns.call("ls", "a.py") for _ in range(4)]
    signal = steps[-1].emissions[0].signal
    evidence = signal.evidence
    assert isinstance(evidence, StepPatternEvidence)
    # Tool steps are the even ones: each follows the model call that asked for it.
    assert evidence.steps == ["step-1-2", "step-1-4", "step-1-6", "step-1-8"]
    assert evidence.step_numbers == [2, 4, 6, 8]
    assert (evidence.tools, evidence.role, evidence.event_id) == (["bash"], "developer", "step-1-8")
    assert "at steps 2, 4, 6, 8" in signal.message
    assert UserSignal.from_json(signal.to_json()) == signal


def test_a_humans_answer_forgets_the_steps_seen_so_far() -> None:
    turns = Turns()
    for _ in range(3):
        turns.call("ls", "a.py")
    turns.feed(loop_event("escalation", resolved=True))
    assert fired(turns.call("ls", "a.py")) == []


def test_a_stored_state_without_the_step_window_still_loads() -> None:
    turns = Turns()
    turns.call("ls", "a.py")
    assert turns.state is not None
    stored = json.loads(turns.state.to_json())
    for key in ("step_turn", "step_last", "step_window", "silent_steps", "window_errors"):
        del stored[key]
    old = TaskState.from_json(json.dumps(stored).encode())
    assert old.step_window == [] and old.events == 2


def test_an_event_id_longer_than_the_limit_is_named_by_its_digest() -> None:
    turns = Turns()
    step = Step()
    for n in range(4):
        call = loop_event("step", event_id="x" * 300 + str(n), step=n + 1)
        step = turns.feed(call)
    evidence = step.emissions[0].signal.evidence
    assert isinstance(evidence, StepPatternEvidence)
    assert all(s.startswith("#") and len(s) == 17 for s in evidence.steps)


def test_the_largest_window_fits_the_signal_and_state_limits() -> None:
    rule = StepRule(threshold=64, level="pause")
    turns = Turns(RiskConfig(steps=StepRulesConfig(repeated_action=rule)))
    step = Step()
    huge = {"action_hash": "a" * 100_000, "observation_hash": "o" * 100_000}
    for n in range(64):
        step = turns.feed(loop_event("step", event_id="y" * 256 + str(n), step=n + 1, **huge))
    assert fired(step) == [("repeated_action", "pause")]
    assert len(step.emissions[0].signal.to_json()) < RISK.limits.signals.max_msg_size
    assert turns.state is not None
    assert len(turns.state.to_json()) < RISK.limits.state.max_msg_size


@pytest.mark.parametrize(
    ("rule", "threshold"),
    [
        ("repeated_action", 2.5),
        ("repeated_failure", 0),
        ("alternating_actions", 3),
        ("no_tool_call", 65),
    ],
)
def test_a_step_threshold_must_be_a_whole_count_within_the_window(
    rule: str, threshold: float
) -> None:
    with pytest.raises(ValidationError, match=rule):
        StepRulesConfig.model_validate({rule: {"threshold": threshold}})


def test_a_disabled_step_rule_never_fires() -> None:
    off = StepRule(enabled=False, threshold=4, level="pause")
    turns = Turns(RiskConfig(steps=StepRulesConfig(repeated_action=off)))
    assert calls_until_fired(turns, [("ls", "a.py")] * 10) == []
