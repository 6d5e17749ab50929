"""OpenTelemetry traces and metrics, when ``telemetry.enabled`` is set (docs/telemetry.md).

Each process installs one ``Telemetry`` at its start (``setup``); the code that records reads
it with ``current()``. Until then, and whenever telemetry is off, ``current()`` is a plain
``Telemetry`` that records nothing and never imports OpenTelemetry, which only
``semspec.core.telemetry.otel`` does (the ``semspec[otel]`` extra).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from semspec.core.errors import ConfigError
from semspec.core.telemetry.types import Telemetry

if TYPE_CHECKING:
    from semspec.core.config.models import SemspecConfig

_process = [Telemetry()]
"""The one slot holding the process's telemetry."""


def current() -> Telemetry:
    """The telemetry of this process (one that records nothing unless one was installed)."""
    return _process[0]


def install(telemetry: Telemetry) -> None:
    """Make ``telemetry`` the process's own from now on."""
    _process[0] = telemetry


@contextmanager
def installed(telemetry: Telemetry) -> Iterator[Telemetry]:
    """``telemetry`` for the block, the previous one after it (tests use an in-memory one)."""
    before = _process[0]
    _process[0] = telemetry
    try:
        yield telemetry
    finally:
        _process[0] = before


def setup(config: SemspecConfig, component: str) -> Telemetry:
    """Install the telemetry ``config`` asks for, for this process's ``component`` (worker,
    cli, monitor), and return it; a ``ConfigError`` when it is on but not installed."""
    settings = config.telemetry
    if not settings.enabled:
        telemetry = Telemetry()
    else:
        try:
            from semspec.core.telemetry.otel import exporting
        except ImportError as exc:
            raise ConfigError(
                f"telemetry is enabled but OpenTelemetry is not installed ({exc.name})",
                field="telemetry.enabled",
                hint="pip install 'semspec[otel]', or set telemetry.enabled to false",
            ) from None
        telemetry = exporting(settings, component)
    install(telemetry)
    return telemetry
