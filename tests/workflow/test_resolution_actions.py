"""One table of escalation answers and one check: the CLI, the console and the workflow's update
validator accept and refuse the same answers, in the same words (``vocabulary.resolution_actions``).
"""

from __future__ import annotations

import math
from typing import get_args

import pytest

from semspec.client.escalations import answer
from semspec.core.errors import InputError
from semspec.core.owner_key import OwnerKey
from semspec.vocabulary import event_payloads
from semspec.vocabulary.resolution_actions import (
    ACTIONS,
    RESOLUTION_ACTIONS,
    ActionSpec,
    ResolutionAction,
    answer_problem,
)
from semspec.workflow.task import messages
from semspec.workflow.task.loop.escalations import Escalations
from semspec.workflow.task.messages import Resolution, TaskStatus

REFUSED = [
    pytest.param("retry", None, 0, 0.0, "action retry needs guidance", id="retry-no-guidance"),
    pytest.param("retry", "  ", 0, 0.0, "action retry needs guidance", id="retry-blank"),
    pytest.param("extend_budget", None, -1, 0.0, "--extra-retries must be 0", id="neg-retries"),
    pytest.param("extend_budget", None, 0, -1.0, "--extra-usd must be a number", id="neg-usd"),
    pytest.param("extend_budget", None, 0, math.inf, "--extra-usd must be a number", id="inf"),
    pytest.param("approve", None, 0, 5.0, "--extra-usd goes with --action extend-budget", id="usd"),
]


OWNER = OwnerKey.generate()


def waiting_task() -> Escalations:
    """A task with one question open, waiting for its owner's answer."""
    status = TaskStatus(
        task_id="t1", title="t", phase="developer", iteration=1, retries=0, max_retries=3
    )
    escalations = Escalations(status=status, owner_key=OWNER.public_key)
    escalations.open(1, "retry_limit", "stuck", None, "loop", nonce="n1")
    return escalations


def check_signed(escalations: Escalations, resolution: Resolution) -> None:
    """Run the workflow's update validator on ``resolution`` signed by the task's owner."""
    pending = escalations.status.pending_escalation
    assert pending is not None
    escalations.check(resolution.signed_by(OWNER, pending))


def test_the_table_names_every_action_of_the_literal_once() -> None:
    assert tuple(spec.name for spec in ACTIONS) == get_args(ResolutionAction) == RESOLUTION_ACTIONS


def test_the_loop_events_and_the_workflow_use_the_one_literal() -> None:
    assert event_payloads.ResolutionAction is ResolutionAction
    assert messages.ResolutionAction is ResolutionAction


@pytest.mark.parametrize("spec", ACTIONS, ids=lambda spec: spec.name)
def test_every_action_in_the_table_is_taken_by_the_cli_and_the_workflow(spec: ActionSpec) -> None:
    name = spec.name
    guidance = "handle the empty list"
    sent = answer(name.replace("_", "-"), guidance)
    assert sent.action == name
    check_signed(waiting_task(), sent)  # no ValueError


def test_an_action_outside_the_table_is_refused_with_the_list_of_actions() -> None:
    problem = answer_problem("merge", None)
    assert problem is not None
    assert problem.message == "--action 'merge' is not one of retry, approve, abort, extend-budget"
    with pytest.raises(InputError, match="is not one of retry"):
        answer("merge", None)


@pytest.mark.parametrize(("action", "guidance", "retries", "usd", "words"), REFUSED)
def test_the_cli_and_the_workflow_refuse_the_same_answer_in_the_same_words(
    action: ResolutionAction, guidance: str | None, retries: int, usd: float, words: str
) -> None:
    with pytest.raises(InputError, match=words) as from_cli:
        answer(action, guidance, retries, usd)
    with pytest.raises(ValueError, match=words) as from_workflow:
        check_signed(waiting_task(), Resolution(action, guidance, retries, extra_usd=usd))
    assert str(from_workflow.value) == from_cli.value.message
