"""structlog setup: console on a TTY, JSON otherwise, secrets masked before rendering.

Masking is ``semspec.core.masking``, the same that gate and command-agent output go through.

structlog is imported when logging is configured or a logger is taken, not with this module:
it costs ~30 ms, which a command that never logs (``semspec task list``) need not pay.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, MutableMapping
from functools import partial
from typing import Any, Literal, TextIO, cast

from semspec.core.masking import MASK, SECRET_NAME, mask_text

LogFormat = Literal["auto", "console", "json"]


def _mask_value(key: str, value: Any) -> Any:
    if SECRET_NAME.search(key) and value not in (None, "", False):
        return MASK
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {k: _mask_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_value(key, v) for v in value]
    return value


def mask_secrets(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask secret-looking keys and values in every field."""
    for key in list(event_dict):
        event_dict[key] = _mask_value(key, event_dict[key])
    return event_dict


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the moment of writing.

    Test runners swap and close stderr per invocation; holding the object seen at configure
    time would later write to a closed file.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


_on_first_use: tuple[LogFormat, str] | None = None
"""The setup ``configure_logging_on_first_use`` asked for, until ``get_logger`` applies it."""


def configure_logging(fmt: LogFormat = "auto", level: str = "INFO", stream: Any = None) -> None:
    """Configure structlog for the process; ``auto`` picks console on a TTY, JSON otherwise."""
    import structlog

    forget_logging_setup()
    out = stream if stream is not None else _CurrentStderr()
    if fmt == "auto":
        fmt = "console" if getattr(out, "isatty", lambda: False)() else "json"
    renderer: Any
    if fmt == "console":
        # Plain tracebacks: rich's pretty tracebacks would print local variables (secrets).
        renderer = structlog.dev.ConsoleRenderer(
            exception_formatter=structlog.dev.plain_traceback, colors=False
        )
    else:
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # Tracebacks become text *before* masking: an exception message can carry a key too.
        structlog.processors.format_exc_info,
        mask_secrets,
        renderer,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, out)),
        cache_logger_on_first_use=False,
    )


def configure_logging_on_first_use(fmt: LogFormat = "auto", level: str = "INFO") -> None:
    """Configure as ``configure_logging(fmt, level)`` does, when ``get_logger`` is first called.

    Only loggers taken with ``get_logger`` apply it; ``forget_logging_setup`` drops it unused.
    """
    global _on_first_use
    _on_first_use = (fmt, level)


def forget_logging_setup() -> None:
    """Drop a setup ``configure_logging_on_first_use`` asked for that no logger applied."""
    global _on_first_use
    _on_first_use = None


def get_logger(name: str) -> Any:
    """A structlog logger bound to ``component=name``."""
    import structlog

    if _on_first_use is not None:
        configure_logging(*_on_first_use)
    return structlog.get_logger(component=name)


def logger_for(name: str) -> Callable[[], Any]:
    """``get_logger(name)``, taken anew at each call: a module keeps this rather than a logger,
    so a setup the CLI asks for after the import (``configure_logging_on_first_use``) applies."""
    return partial(get_logger, name)
