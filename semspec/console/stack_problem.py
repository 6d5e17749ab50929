"""The words a page shows when the stack did not answer: semspec's own error with its hint, or
what Temporal answered. One wording for every page (board, inbox, task, knowledge)."""

from __future__ import annotations

from temporalio.service import RPCError

from semspec.core.errors import SemspecError

STACK_ERRORS = (SemspecError, RPCError)
"""What a page catches around a call to the stack and shows with ``stack_problem``."""


def stack_problem(exc: SemspecError | RPCError) -> str:
    """``exc`` as a page shows it: ``message (hint)``, or ``Temporal answered: message``."""
    if isinstance(exc, RPCError):
        return f"Temporal answered: {exc.message}"
    return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
