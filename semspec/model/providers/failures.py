"""Map HTTP statuses and transport failures of LLM APIs to canonical fallback reasons."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType

from semspec.core.errors import ProviderError
from semspec.core.masking import mask_text
from semspec.core.reasons import FallbackReason

_STATUS_HINTS = {
    401: "check that the environment variable named by api_key_env holds a valid key",
    403: "the key is valid but not allowed to use this model or endpoint",
    404: "check the model id and base_url (list models with GET <base_url>/models)",
}


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The ``Retry-After`` header in seconds, when it is a number."""
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date; Temporal's backoff takes over


def status_error(
    provider: str,
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """A ``ProviderError`` for an HTTP error status: 429/408/5xx retry, other 4xx fail fast."""
    # Servers sometimes quote the rejected key back ("Incorrect API key provided: sk-...").
    detail = mask_text(detail.strip()[:300])
    if status == 429:
        reason, retryable = FallbackReason.RATE_LIMITED, True
    elif status in (408, 504):
        reason, retryable = FallbackReason.TIMEOUT, True
    elif status >= 500:
        reason, retryable = FallbackReason.TRANSPORT_ERROR, True
    else:
        # Bad credentials, unknown model, malformed request: another attempt cannot help.
        reason, retryable = FallbackReason.TRANSPORT_ERROR, False
    return ProviderError(
        f"HTTP {status}: {detail}" if detail else f"HTTP {status}",
        provider=provider,
        reason=reason,
        retryable=retryable,
        status=status,
        retry_after=retry_after_seconds(headers),
        hint=_STATUS_HINTS.get(status),
    )


def timeout_error(provider: str, detail: str = "request timed out") -> ProviderError:
    """A retryable ``timeout`` failure."""
    return ProviderError(detail, provider=provider, reason=FallbackReason.TIMEOUT, retryable=True)


def transport_error(provider: str, detail: str) -> ProviderError:
    """A retryable ``transport_error`` (connection refused, reset, unparseable body)."""
    return ProviderError(
        detail[:300], provider=provider, reason=FallbackReason.TRANSPORT_ERROR, retryable=True
    )


@contextmanager
def sdk_errors(provider: str, sdk: ModuleType, reply: str) -> Iterator[None]:
    """Turn what a call of the ``openai`` or ``anthropic`` SDK raises into ``ProviderError``s.

    Both SDKs name their errors alike; ``reply`` names what a valid answer is ("completion").
    """
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise timeout_error(provider) from exc
    except sdk.APIStatusError as exc:
        detail = _detail(exc.body)
        raise status_error(provider, exc.status_code, detail, exc.response.headers) from exc
    except sdk.APIConnectionError as exc:
        raise transport_error(provider, f"cannot reach the server: {exc}") from exc
    except (sdk.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
        raise transport_error(provider, f"reply is not a valid {reply}: {exc}") from exc


def _detail(body: object) -> str:
    """The server's error message, never the request (which could echo credentials)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message", ""))
        return str(error)
    return str(body or "")
