"""Scenario: a developer repeating the same failing call is stopped within the step rule's
threshold, not at its step limit; without the step rules the same run goes to the limit.

The LLM developer (``tests/support/looping_developer.py``) asks for the same failing
``list_dir`` at every step, each reply ``DELAY_S`` late. ``risk.steps.repeated_failure``
(threshold 3) pauses it after its third failing call: the turn stops, the loop checkpoints and
goes on in a fresh run, which loops again and is halted at the same threshold (ADR 0006). Each
turn may make one model call past the threshold: the one the agent asked for right after the
third failure, before the monitor's pause reached it. The counts are the fake model's requests,
never the clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from semspec.core.config.models import StepRulesConfig
from tests.support.looping_developer import run_looping_developer, without_step_rules
from tests.support.stack import Stack, check_gate, running_stack, sample_config

MAX_STEPS = 40
DELAY_S = 0.3
THRESHOLD = int(StepRulesConfig().repeated_failure.threshold)
"""``risk.steps.repeated_failure``'s default: three failing calls."""
SLACK = 1
"""Model calls a turn may make past the threshold: the one already under way."""


@pytest.fixture(scope="module")
def stack_without_step_rules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own whose monitor runs with every ``risk.steps`` rule turned off."""
    config = sample_config([check_gate()], risk=without_step_rules())
    root: Path = tmp_path_factory.mktemp("without-step-rules")
    with running_stack(root, config) as stack:
        yield stack


def test_a_looping_developer_is_stopped_within_the_threshold_not_at_its_step_limit(
    stack: Stack,
) -> None:
    run = run_looping_developer(stack, "loops", MAX_STEPS, DELAY_S)

    escalation = run.status["pending_escalation"]
    assert (escalation["source"], escalation["reason"]) == ("halt", "repeated_failure")
    assert len(run.calls_per_turn) == 2, run.calls_per_turn  # paused, then halted
    assert all(THRESHOLD <= calls <= THRESHOLD + SLACK for calls in run.calls_per_turn), (
        run.calls_per_turn
    )
    assert run.model_calls * 4 < MAX_STEPS


def test_without_the_step_rules_the_same_loop_runs_to_its_step_limit(
    stack_without_step_rules: Stack,
) -> None:
    run = run_looping_developer(stack_without_step_rules, "loops-unwatched", MAX_STEPS, DELAY_S)

    assert run.calls_per_turn == [MAX_STEPS]
    escalation = run.status["pending_escalation"]
    assert escalation["reason"] == "budget_exhausted", escalation
    assert "step_limit" in escalation["message"], escalation
