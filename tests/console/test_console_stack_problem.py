"""The one wording every console page uses when the stack does not answer
(``semspec/console/stack_problem.py``): semspec's error with its hint, Temporal's refusal named."""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

from semspec.console.stack_problem import STACK_ERRORS, stack_problem
from semspec.core.errors import NotFoundError, SemspecError


def test_semspec_errors_show_their_hint_in_brackets() -> None:
    down = SemspecError("Temporal is not reachable", hint="run `semspec up`")

    assert stack_problem(down) == "Temporal is not reachable (run `semspec up`)"
    assert stack_problem(SemspecError("no stack")) == "no stack"


def test_temporals_refusal_is_named_as_temporals() -> None:
    refused = RPCError("namespace not found", RPCStatusCode.NOT_FOUND, b"")

    assert stack_problem(refused) == "Temporal answered: namespace not found"


def test_pages_catch_every_kind_they_can_word() -> None:
    missing = NotFoundError("task", "t-1")

    assert isinstance(missing, STACK_ERRORS)
    assert isinstance(RPCError("x", RPCStatusCode.UNAVAILABLE, b""), STACK_ERRORS)
    assert not isinstance(ValueError("x"), STACK_ERRORS)
