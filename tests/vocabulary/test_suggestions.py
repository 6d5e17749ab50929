"""One table of next steps: a risk signal and an escalation offer the same answers."""

from __future__ import annotations

from semspec.vocabulary.suggestions import suggested_actions


def commands(task_id: str, reason: str, level: str) -> list[str]:
    return [a.command for a in suggested_actions(task_id, reason, level)]


def test_a_halt_from_the_monitor_offers_every_answer_an_escalation_does() -> None:
    resolve = "semspec escalations resolve t1 --action"
    halted = commands("t1", "retry_limit", "halt")
    assert halted == [
        "semspec task status t1",
        "semspec task logs t1",
        f"{resolve} retry --guidance 'explain what the previous attempts missed'",
        f"{resolve} approve",
        f"{resolve} abort",
        f"{resolve} extend-budget --extra-retries N",
    ]
    escalated = commands("t1", "budget_exhausted", "escalate")
    assert [c.split(" --guidance")[0] for c in escalated[:-1]] == [
        c.split(" --guidance")[0] for c in halted
    ]
    # A spent budget may be the dollars: that answer comes last.
    assert escalated[-1] == f"{resolve} extend-budget --extra-usd N"


def test_an_unknown_price_offers_to_run_the_model_anyway() -> None:
    offered = suggested_actions("t1", "unknown_price", "escalate")
    approve = next(a for a in offered if a.command.endswith("--action approve"))
    assert approve.description == "run the model without a price for the rest of the task"


def test_a_warning_offers_only_what_its_reason_calls_for() -> None:
    assert commands("t1", "context_pressure", "warn") == [
        "semspec task status t1",
        "semspec escalations resolve t1 --action extend-budget --extra-retries N",
    ]
    scope = suggested_actions("t1", "scope_creep", "warn")
    assert [a.description for a in scope] == [
        "see where the task stands",
        "let the developer try again with guidance",
        "accept the extra files",
    ]


def test_task_ids_are_quoted_for_the_shell() -> None:
    assert commands("a b", "retry_limit", "warn") == ["semspec task status 'a b'"]
