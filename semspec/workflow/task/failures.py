"""Turn semspec errors into Temporal application errors at the activity boundary."""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

from semspec.core.errors import ProviderError, SemspecError


def to_application_error(exc: SemspecError) -> ApplicationError:
    """The Temporal form of one of our errors.

    Provider errors keep their canonical reason as the error type (so the workflow can label the
    escalation) and stay retryable when another attempt can help; every other semspec error is
    bad input or state that retrying cannot fix.
    """
    hint = f" (hint: {exc.hint})" if exc.hint else ""
    if isinstance(exc, ProviderError):
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
        return ApplicationError(
            f"{exc.message}{hint}",
            type=exc.reason.value,
            non_retryable=not exc.retryable,
            next_retry_delay=delay,
        )
    return ApplicationError(f"{exc.message}{hint}", type=type(exc).__name__, non_retryable=True)
