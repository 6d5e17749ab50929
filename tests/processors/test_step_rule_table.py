"""The step-rule table drives every part that names a step rule: the config's keys and defaults,
the monitor's detectors and their order, the signals' words, the suggested guidance and the
rule table of ``docs/risk-monitor.md`` (``core.step_rule_table``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from semspec.core.config.models import MAX_STEP_WINDOW, StepRulesConfig
from semspec.core.config.reference import render_reference
from semspec.core.step_rule_table import STEP_RULE_NAMES, STEP_RULES, StepRuleSpec
from semspec.processors.risk_monitor.signals import describe
from semspec.processors.risk_monitor.step_rules import TOOL_PATTERNS
from semspec.vocabulary.signal_evidence import StepPatternEvidence
from semspec.vocabulary.suggestions import escalation_answers

DOC = Path(__file__).resolve().parents[2] / "docs" / "risk-monitor.md"
MODEL_RULES = {"no_tool_call", "context_window_errors"}
"""The ``model`` rows: each counts in a field of its own in the monitor's task state."""


def docs_row(spec: StepRuleSpec) -> str:
    """The row of ``docs/risk-monitor.md``'s rule table a step rule must have."""
    return (
        f"| `{spec.reason}` | `step`: {spec.watches} | {spec.threshold} {spec.counted} | `pause` |"
    )


def test_the_table_names_each_rule_once() -> None:
    assert len(set(STEP_RULE_NAMES)) == len(STEP_RULES)


@pytest.mark.parametrize("spec", STEP_RULES, ids=lambda spec: spec.reason)
def test_every_row_is_a_config_key_with_its_default_and_meaning(spec: StepRuleSpec) -> None:
    rules = StepRulesConfig()
    assert rules.rule(spec.reason).threshold == spec.threshold
    assert rules.rule(spec.reason).level == "pause"
    field = StepRulesConfig.model_fields[spec.reason]
    assert field.description == spec.meaning
    assert f"| `risk.steps.{spec.reason}.threshold` | `{spec.threshold}` |" in render_reference()


def test_the_config_has_a_key_per_row_and_wait_tools_only() -> None:
    assert list(StepRulesConfig.model_fields) == [*STEP_RULE_NAMES, "wait_tools"]


@pytest.mark.parametrize("spec", STEP_RULES, ids=lambda spec: spec.reason)
def test_a_threshold_below_the_rows_least_is_refused(spec: StepRuleSpec) -> None:
    StepRulesConfig.model_validate({spec.reason: {"threshold": spec.least}})
    StepRulesConfig.model_validate({spec.reason: {"threshold": MAX_STEP_WINDOW}})
    with pytest.raises(ValueError, match=f"from {spec.least} to {MAX_STEP_WINDOW}"):
        StepRulesConfig.model_validate({spec.reason: {"threshold": spec.least - 1}})


def test_every_tool_row_has_a_detector_and_every_detector_a_row() -> None:
    tool_rows = [spec.reason for spec in STEP_RULES if spec.reads == "tool"]
    assert set(TOOL_PATTERNS) == set(tool_rows)
    assert {spec.reason for spec in STEP_RULES if spec.reads == "model"} == MODEL_RULES


@pytest.mark.parametrize("spec", STEP_RULES, ids=lambda spec: spec.reason)
def test_a_signal_of_each_rule_says_its_pattern(spec: StepRuleSpec) -> None:
    evidence = StepPatternEvidence(
        event_id="e9",
        iteration=1,
        role="developer",
        steps=["e7", "e9"],
        step_numbers=[7, 9],
        tools=[],
    )
    message = describe("t1", spec.reason, "pause", evidence)
    assert message == f"task t1: the developer {spec.pattern} at steps 7, 9 → pause"


@pytest.mark.parametrize("spec", STEP_RULES, ids=lambda spec: spec.reason)
def test_the_retry_suggested_for_each_rule_carries_its_guidance(spec: StepRuleSpec) -> None:
    commands = [action.command for action in escalation_answers("t1", spec.reason)]
    assert f"--action retry --guidance {shlex.quote(spec.guidance)}" in commands[0]


@pytest.mark.parametrize("spec", STEP_RULES, ids=lambda spec: spec.reason)
def test_the_docs_rule_table_has_each_rows_line(spec: StepRuleSpec) -> None:
    doc = DOC.read_text(encoding="utf-8")
    assert docs_row(spec) in doc.splitlines(), f"add to docs/risk-monitor.md: {docs_row(spec)}"
    assert f"- **`{spec.reason}`**:" in doc, "describe the rule under 'Step rules'"


def test_the_docs_rule_table_lists_no_step_rule_the_table_lacks() -> None:
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if "| `step`:" in line]
    assert rows == [docs_row(spec) for spec in STEP_RULES]
