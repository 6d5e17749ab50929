"""How the task workflow calls its activities, and how it reads their failures.

Every activity call of ``TaskWorkflow`` goes through ``ActivityCalls.start``: one retry policy
(Temporal owns retries), one timeout for the short bookkeeping activities, and a heartbeat
timeout for the long steps (developer, gates, reviewer) that a halt or pause may cancel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, overload

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutError
from temporalio.types import (
    CallableAsyncSingleParam,
    CallableSyncSingleParam,
    MethodAsyncSingleParam,
    MethodSyncSingleParam,
)
from temporalio.workflow import ActivityCancellationType, ActivityHandle

from semspec.core.errors import non_retryable_types
from semspec.core.reasons import FallbackReason
from semspec.workflow.task.loop.bounds import FALLBACK_REASONS

SHORT_TIMEOUT = timedelta(seconds=60)
"""Start-to-close timeout of the bookkeeping activities (workspace, commit, publish, ...)."""
HEARTBEAT_TIMEOUT = timedelta(seconds=15)
NON_RETRYABLE = non_retryable_types()
"""Error types no retry can fix: bad input or state, which ends the task as failed."""

A = TypeVar("A")
T = TypeVar("T")


def retry_policy(attempts: int) -> RetryPolicy:
    """The retry policy of every activity: ``attempts`` tries, backing off up to 20 s."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=20),
        maximum_attempts=attempts,
        non_retryable_error_types=NON_RETRYABLE,
    )


@dataclass(frozen=True)
class ActivityCalls:
    """Starts the task's activities with the loop's retry policy; call only from the workflow."""

    attempts: int
    """Attempts of each activity (``LoopLimits.activity_attempts``)."""

    @overload
    def start(
        self,
        activity: MethodAsyncSingleParam[Any, A, T],
        arg: A,
        timeout: timedelta = ...,
        *,
        heartbeat: bool = ...,
        cancellation: ActivityCancellationType = ...,
    ) -> ActivityHandle[T]: ...

    @overload
    def start(
        self,
        activity: MethodSyncSingleParam[Any, A, T],
        arg: A,
        timeout: timedelta = ...,
        *,
        heartbeat: bool = ...,
        cancellation: ActivityCancellationType = ...,
    ) -> ActivityHandle[T]: ...

    @overload
    def start(
        self,
        activity: CallableAsyncSingleParam[A, T],
        arg: A,
        timeout: timedelta = ...,
        *,
        heartbeat: bool = ...,
        cancellation: ActivityCancellationType = ...,
    ) -> ActivityHandle[T]: ...

    @overload
    def start(
        self,
        activity: CallableSyncSingleParam[A, T],
        arg: A,
        timeout: timedelta = ...,
        *,
        heartbeat: bool = ...,
        cancellation: ActivityCancellationType = ...,
    ) -> ActivityHandle[T]: ...

    def start(
        self,
        activity: Callable[..., Any],
        arg: Any,
        timeout: timedelta = SHORT_TIMEOUT,
        *,
        heartbeat: bool = False,
        cancellation: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
    ) -> ActivityHandle[Any]:
        """Schedule ``activity`` (a function or a ``TaskActivities`` method) with ``arg``.

        ``heartbeat`` for the long steps; ``cancellation`` says whether cancelling the handle
        waits until the activity has stopped.
        """
        return workflow.start_activity(
            activity,
            arg,
            start_to_close_timeout=timeout,
            heartbeat_timeout=HEARTBEAT_TIMEOUT if heartbeat else None,
            retry_policy=retry_policy(self.attempts),
            cancellation_type=cancellation,
        )


def was_cancelled(err: ActivityError) -> bool:
    """Whether the activity failed because it was cancelled (the task itself was)."""
    return isinstance(err.cause, CancelledError)


def is_input_error(err: ActivityError) -> bool:
    """Whether the activity failed on bad input or state, which no retry or human answer fixes."""
    cause = err.cause
    return isinstance(cause, ApplicationError) and cause.type in NON_RETRYABLE


def fallback_reason(err: ActivityError) -> str:
    """The escalation reason of a failed activity: its own fallback reason, a timeout, or
    ``transport_error``."""
    cause = err.cause
    if isinstance(cause, TimeoutError):
        return FallbackReason.TIMEOUT.value
    if isinstance(cause, ApplicationError) and cause.type in FALLBACK_REASONS:
        return str(cause.type)
    return FallbackReason.TRANSPORT_ERROR.value


def message_of(err: ActivityError) -> str:
    """What went wrong, in the activity's own words."""
    cause = err.cause
    return str(cause.message if isinstance(cause, ApplicationError) else cause or err)
