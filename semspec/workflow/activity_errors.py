"""The one place where semspec's errors become Temporal errors: ``@activity_errors`` on an activity.

An activity raises our own errors (``semspec.core.errors``) like any other code; the decorator
turns each into an ``ApplicationError`` whose ``non_retryable`` comes from the error itself
(``SemspecError.retryable``), so the retry decision lives with the error class, not in a list of
names. Other exceptions pass through untouched and Temporal retries them as usual.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar, overload

from temporalio.exceptions import ApplicationError

from semspec.core.errors import ProviderError, SemspecError

P = ParamSpec("P")
T = TypeVar("T")


def to_application_error(exc: SemspecError) -> ApplicationError:
    """The Temporal form of one of our errors: its message (and hint), type and retryability.

    A provider error's type is its canonical fallback reason, so the workflow can label the
    escalation, and it carries the provider's ``Retry-After`` as the next retry's delay; every
    other error's type is its class name.
    """
    hint = f" (hint: {exc.hint})" if exc.hint else ""
    kind, delay = type(exc).__name__, None
    if isinstance(exc, ProviderError):
        kind = exc.reason.value
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
    return ApplicationError(
        f"{exc.message}{hint}", type=kind, non_retryable=not exc.retryable, next_retry_delay=delay
    )


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except SemspecError as exc:
        raise to_application_error(exc) from None


@overload
def activity_errors(
    fn: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]: ...


@overload
def activity_errors(fn: Callable[P, T]) -> Callable[P, T]: ...


def activity_errors(fn: Callable[P, Any]) -> Callable[P, Any]:
    """Wrap an activity (sync or async) so the semspec errors it raises reach Temporal mapped.

    Put it under ``@activity.defn``: the wrapper keeps the activity's name, signature and
    type hints, and stays a coroutine function when the activity is one.
    """
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
            with _mapped():
                return await fn(*args, **kwargs)

        return run_async

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> Any:
        with _mapped():
            return fn(*args, **kwargs)

    return run
