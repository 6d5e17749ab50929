"""The typed contract between the task loop and the risk monitor: one model per event kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from semspec.vocabulary import event_payloads, signal_evidence
from semspec.vocabulary.event_payloads import (
    EscalationRaised,
    EscalationResolved,
    EscalationSource,
    Payload,
    Pressure,
    ResolutionAction,
)
from semspec.vocabulary.event_reference import SECTIONS, render_event_reference
from semspec.vocabulary.events import (
    LoopEvent,
    SuggestedAction,
    UserSignal,
    event_from_json,
    monitor_event,
    validation_summary,
)
from semspec.vocabulary.signal_evidence import ConflictEvidence, RetryLimitEvidence
from semspec.vocabulary.subjects import EVENT_KINDS
from semspec.workflow.context.monitor import Pressure as MonitorPressure
from semspec.workflow.task import messages
from tests.support.monitor_events import payload

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"
ENVELOPE = {"event_id": "e1", "task_id": "t1", "run_id": "r1", "iteration": 2}
SHAPES = {
    "iteration": payload("iteration"),
    "gate": payload("gate", results=[{"name": "t", "passed": True, "required": True,
                                      "duration_ms": 3.5}]),
    "review": payload("review"),
    "context": payload("context", tokens_used=5_000),
    "files": payload("files", files=["a.py", "b.py"], task_files=["a.py"]),
    "escalation (raised)": payload("escalation"),
    "escalation (resolved)": payload("escalation", resolved=True),
    "finished": payload("finished"),
    "step": payload("step"),
}  # fmt: skip


def kind_of(shape: str) -> str:
    return shape.split(" ")[0]


def errors(kind: str, data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        monitor_event(kind, data, **ENVELOPE)
    return validation_summary(caught.value)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_complete_payload_is_accepted_and_survives_the_wire(shape: str) -> None:
    event = monitor_event(kind_of(shape), SHAPES[shape], **ENVELOPE)
    assert event.kind == kind_of(shape)
    assert event_from_json(event.to_json()) == event


@pytest.mark.parametrize("shape", SHAPES)
def test_every_missing_field_is_named(shape: str) -> None:
    for field in SHAPES[shape]:
        if field == "resolved":
            continue  # without it the payload is a question, which lacks other fields
        data = {k: v for k, v in SHAPES[shape].items() if k != field}
        assert f".{field}: Field required" in errors(kind_of(shape), data)


@pytest.mark.parametrize("shape", SHAPES)
def test_an_unknown_field_is_refused(shape: str) -> None:
    summary = errors(kind_of(shape), {**SHAPES[shape], "surprise": 1})
    assert "surprise: Extra inputs are not permitted" in summary


@pytest.mark.parametrize("shape", SHAPES)
def test_every_field_of_the_wrong_type_is_named(shape: str) -> None:
    for field in SHAPES[shape]:
        summary = errors(kind_of(shape), {**SHAPES[shape], field: {"not": "this"}})
        assert f".{field}" in summary, summary


def test_numbers_as_text_are_not_numbers() -> None:
    assert "data.retries: Input should be a valid integer" in errors(
        "iteration", payload("iteration", retries="4")
    )


def test_a_payload_of_another_kind_is_refused() -> None:
    summary = errors("review", SHAPES["iteration"])
    assert "review.data.phase: Extra inputs are not permitted" in summary


def test_an_unknown_kind_is_refused() -> None:
    assert "does not match any of the expected tags" in errors("teleport", {})


def test_an_escalation_is_a_question_or_an_answer_by_its_resolved_key() -> None:
    raised = monitor_event("escalation", SHAPES["escalation (raised)"], **ENVELOPE)
    answer = monitor_event("escalation", SHAPES["escalation (resolved)"], **ENVELOPE)
    assert isinstance(raised.data, EscalationRaised)
    assert isinstance(answer.data, EscalationResolved)
    assert "data.resolved.resolved: Input should be True" in errors(
        "escalation", {**SHAPES["escalation (resolved)"], "resolved": False}
    )


def test_a_resolution_is_not_an_iteration_field() -> None:
    assert "data.resolution: Extra inputs" in errors(
        "iteration", payload("iteration", resolution="retry")
    )


def test_every_subject_kind_has_an_event_model() -> None:
    kinds = {kind_of(shape) for shape in SHAPES}
    assert kinds == set(EVENT_KINDS)
    envelopes = {sub.model_fields["kind"].default for sub in LoopEvent.__subclasses__()}
    assert envelopes == set(EVENT_KINDS)


def test_the_literals_match_the_ones_of_the_loop() -> None:
    assert get_args(ResolutionAction) == get_args(messages.ResolutionAction)
    assert set(get_args(EscalationSource)) == set(get_args(messages.EscalationSource))
    assert get_args(Pressure) == get_args(MonitorPressure)


def test_a_signal_takes_each_rules_evidence_and_nothing_else() -> None:
    base = {"signal_id": "s1", "task_id": "t1", "level": "halt", "reason": "conflicting_changes"}
    conflict = ConflictEvidence(event_id="e1", files=["a.py"], other_tasks=["t2"])
    signal = UserSignal.model_validate({**base, "evidence": conflict.model_dump()})
    assert signal.evidence == conflict
    assert UserSignal.from_json(signal.to_json()) == signal
    with pytest.raises(ValidationError):
        UserSignal.model_validate({**base, "evidence": {"event_id": "e1", "files": "a.py"}})
    with pytest.raises(ValidationError):
        UserSignal.model_validate({**base, "level": "panic", "evidence": conflict.model_dump()})


def test_a_signal_of_the_loops_escalation_carries_its_payload() -> None:
    signal = UserSignal.model_validate(
        {
            "signal_id": "s1",
            "task_id": "t1",
            "level": "escalate",
            "reason": "budget_exhausted",
            "evidence": SHAPES["escalation (raised)"],
            "suggested_actions": [{"description": "look", "command": "semspec task logs t1"}],
        }
    )
    assert isinstance(signal.evidence, EscalationRaised)
    assert signal.suggested_actions == [
        SuggestedAction(description="look", command="semspec task logs t1")
    ]
    retry = RetryLimitEvidence(event_id="e", iteration=1, retries=4, threshold=3)
    assert isinstance(signal.model_copy(update={"evidence": retry}).evidence, RetryLimitEvidence)


def test_docs_events_md_matches_the_models() -> None:
    assert DOC.read_text(encoding="utf-8") == render_event_reference(), (
        "regenerate with `python -m semspec.vocabulary.event_reference > docs/events.md`"
    )


def test_the_reference_lists_every_model_of_the_contract_and_each_field_has_a_meaning() -> None:
    listed = {model for _, models in SECTIONS for model, _ in models}
    defined = {
        value
        for module in (event_payloads, signal_evidence)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
        and value not in (Payload, signal_evidence.RuleEvidence)
    }
    assert defined <= listed
    undocumented = [line for line in render_event_reference().splitlines() if line.endswith("|  |")]
    assert undocumented == []
