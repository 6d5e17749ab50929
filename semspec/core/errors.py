"""The one error hierarchy of semspec.

Every error carries a one-line ``message`` and an optional ``hint`` saying what to do about
it; the CLI prints both and exits with ``exit_code``. ``retryable`` says whether another attempt
of the same operation can succeed: Temporal retries an activity only then, and the task loop
fails a task at once on the others (``non_retryable_types``)::

    SemspecError                      exit 1, not retryable
    ├── InputError                    exit 2  (the user gave something we cannot use)
    │   ├── ConfigError               file, line, field path, expected form
    │   ├── TaskSpecError             field of a task or plan spec
    │   ├── ScriptError               file and field of a scripted-agent script
    │   ├── NotFoundError             kind and id of the missing thing
    │   └── ContextBudgetError        tokens needed and available for the reviewer's context
    ├── ServiceError                  service name and address; retryable
    ├── GitError                      repository path
    ├── GateError                     gate name
    └── ProviderError                 provider, fallback reason, HTTP status; retryable per error
"""

from __future__ import annotations

from semspec.core.reasons import FallbackReason


class SemspecError(Exception):
    """Base of every error semspec raises on purpose."""

    exit_code = 1
    retryable: bool = False
    """Whether another attempt of the same call can succeed; a class default (``ProviderError``
    decides per error)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputError(SemspecError):
    """Input from the user (arguments, files) that cannot be used as given."""

    exit_code = 2


class ConfigError(InputError):
    """A config file that does not parse or does not validate."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        field: str | None = None,
        line: int | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.field = field
        self.line = line
        self.expected = expected
        self.problem = message  # without the location, for listings that show it apart
        where = path or "<config>"
        if line is not None:
            where = f"{where}:{line}"
        parts = [where]
        if field:
            parts.append(field)
        full = ": ".join([*parts, message])
        if expected:
            full = f"{full} (expected {expected})"
        super().__init__(full, hint=hint)


class TaskSpecError(InputError):
    """A task or plan spec with a missing or invalid field."""

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message, hint=hint)


class ScriptError(InputError):
    """A scripted-agent script that does not parse or names unknown fields."""

    def __init__(
        self, message: str, *, path: str, field: str | None = None, hint: str | None = None
    ) -> None:
        self.path = path
        self.field = field
        where = f"{path}: {field}" if field else path
        super().__init__(f"{where}: {message}", hint=hint)


class NotFoundError(InputError):
    """A task, escalation, SOP or other named thing that does not exist."""

    def __init__(self, kind: str, ident: str, *, hint: str | None = None) -> None:
        self.kind = kind
        self.ident = ident
        super().__init__(f"{kind} {ident!r} not found", hint=hint)


class ContextBudgetError(InputError):
    """The reviewer's must-have context (the requirements of error SOPs) does not fit its budget."""

    def __init__(
        self, message: str, *, needed: int, available: int, hint: str | None = None
    ) -> None:
        self.needed = needed
        self.available = available
        super().__init__(
            f"{message}: needs {needed} tokens, {available} available",
            hint=hint
            or "use a model with a larger window, split the task into fewer files, "
            "or narrow the SOPs' applies_to",
        )


class ServiceError(SemspecError):
    """A service (NATS, Temporal, graph store) that cannot be started or reached."""

    retryable = True  # a service that is restarting or busy may answer the next attempt

    def __init__(
        self, message: str, *, service: str, address: str | None = None, hint: str | None = None
    ) -> None:
        self.service = service
        self.address = address
        at = f" at {address}" if address else ""
        super().__init__(f"{service}{at}: {message}", hint=hint)


class GitError(SemspecError):
    """A git operation on the target repository that failed."""

    def __init__(self, message: str, *, repo: str, hint: str | None = None) -> None:
        self.repo = repo
        super().__init__(f"git ({repo}): {message}", hint=hint)


class GateError(SemspecError):
    """A gate that cannot be run at all (as opposed to one that ran and failed)."""

    def __init__(self, message: str, *, gate: str, hint: str | None = None) -> None:
        self.gate = gate
        super().__init__(f"gate {gate!r}: {message}", hint=hint)


class ProviderError(SemspecError):
    """An LLM provider call that failed, labelled with the canonical fallback reason.

    ``retryable`` says whether another attempt can help (rate limits, timeouts, 5xx); bad
    credentials or an unknown model are not retryable and should fail the activity at once.
    The message never contains the API key.
    """

    retryable = True  # the class default; each error says for itself in ``__init__``

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        reason: FallbackReason,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str | None = None,
    ) -> None:
        self.provider = provider
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        super().__init__(f"{provider}: {message} ({reason.value})", hint=hint)


def non_retryable_types() -> list[str]:
    """Names of the error classes above that no retry can fix, base class first.

    Only this module's classes count, so the list is the same in every process whatever else it
    imported (the task workflow puts it in its retry policy and replays must agree).
    """
    found: list[str] = []
    pending: list[type[SemspecError]] = [SemspecError]
    while pending:
        cls = pending.pop(0)
        if cls.__module__ == __name__ and not cls.retryable:
            found.append(cls.__name__)
        pending.extend(cls.__subclasses__())
    return found
