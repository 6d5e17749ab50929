"""The one boundary between semspec's errors and Temporal's: types, messages and retryability."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError

from semspec.core.errors import (
    GitError,
    ProviderError,
    ScriptError,
    ServiceError,
    non_retryable_types,
)
from semspec.core.reasons import FallbackReason
from semspec.workflow.activity_errors import activity_errors, to_application_error


def test_the_non_retryable_types_are_derived_from_the_error_classes() -> None:
    names = non_retryable_types()

    assert {"InputError", "ScriptError", "ConfigError", "GitError", "GateError"} <= set(names)
    assert {"TaskSpecError", "NotFoundError", "ContextBudgetError"} <= set(names)
    assert "ServiceError" not in names  # a service may answer the next attempt
    assert "ProviderError" not in names  # its Temporal type is its fallback reason


def test_an_error_becomes_an_application_error_of_its_class_with_its_hint() -> None:
    error = to_application_error(GitError("branch gone", repo="/r", hint="fetch it"))

    assert (error.type, error.non_retryable) == ("GitError", True)
    assert error.message == "git (/r): branch gone (hint: fetch it)"


def test_a_service_error_stays_retryable() -> None:
    error = to_application_error(ServiceError("refused", service="graph store"))

    assert (error.type, error.non_retryable) == ("ServiceError", False)


def test_a_provider_error_keeps_its_reason_its_retryability_and_its_delay() -> None:
    limited = ProviderError(
        "slow down",
        provider="openai",
        reason=FallbackReason.RATE_LIMITED,
        retryable=True,
        retry_after=3,
    )
    denied = ProviderError(
        "bad key", provider="openai", reason=FallbackReason.TRANSPORT_ERROR, retryable=False
    )

    first, second = to_application_error(limited), to_application_error(denied)

    assert (first.type, first.non_retryable) == (FallbackReason.RATE_LIMITED.value, False)
    assert first.next_retry_delay == timedelta(seconds=3)
    assert (second.type, second.non_retryable) == (FallbackReason.TRANSPORT_ERROR.value, True)


def test_a_plain_activity_raises_our_errors_as_application_errors() -> None:
    @activity_errors
    def prepare(path: str) -> str:
        raise ScriptError("not valid YAML", path=path)

    with pytest.raises(ApplicationError) as caught:
        prepare("s.yaml")

    assert (caught.value.type, caught.value.message) == ("ScriptError", "s.yaml: not valid YAML")
    assert not inspect.iscoroutinefunction(prepare)


async def test_an_async_activity_stays_a_coroutine_function_and_maps_its_errors() -> None:
    @activity_errors
    async def develop(path: str) -> str:
        raise GitError("locked", repo=path)

    with pytest.raises(ApplicationError) as caught:
        await develop("/r")

    assert caught.value.type == "GitError"
    assert inspect.iscoroutinefunction(develop)
    assert list(inspect.signature(develop).parameters) == ["path"]


def test_other_exceptions_pass_through_for_temporal_to_retry() -> None:
    @activity_errors
    def flaky() -> None:
        raise ConnectionError("reset")

    with pytest.raises(ConnectionError):
        flaky()
