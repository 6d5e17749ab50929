"""What a ``command`` agent gets from the worker's environment, and the program it really runs.

A role names the variables its CLI needs (``env_pass``: passed through by name; ``env_set``:
fixed values; ``api_key_env``: its key), besides the base set every fenced command gets
(``semspec.core.sandbox.BASE_ENV``). Nothing else of the worker's environment reaches it
(docs/security.md). A named variable that is unset would only make the CLI retry for minutes
against the wrong endpoint or ask for a login, so the run does not start: the developer fails
at once with the variable's name (docs/providers.md, "An external coding agent").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from semspec.core.errors import ConfigError
from semspec.core.sandbox import child_env

_ENV_OPTIONS_WITH_VALUE = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
"""Options of ``env(1)`` that take the next argument as their value."""


@dataclass(frozen=True)
class RoleEnvironment:
    """The variables one role's CLI gets beyond the base set."""

    passed: tuple[str, ...] = ()
    """Names taken from the worker's environment (``env_pass``); each must be set."""
    fixed: tuple[tuple[str, str], ...] = ()
    """Names and values set for the CLI (``env_set``); they win over passed ones."""
    api_key_env: str | None = None
    """The role's key variable; it must be set and not empty."""
    role: str = "models.developer"
    """The config section, for the error."""

    def missing(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The named variables the worker's environment lacks (a key must also be non-empty)."""
        source = os.environ if environ is None else environ
        missing = [name for name in self.passed if name not in source]
        key = self.api_key_env
        if key and not source.get(key) and key not in missing:
            missing.append(key)
        return missing

    def check(self, environ: Mapping[str, str] | None = None) -> None:
        """Raise a ConfigError naming every missing variable (before anything runs)."""
        missing = self.missing(environ)
        if not missing:
            return
        names = ", ".join(missing)
        key_only = missing == [self.api_key_env]
        field = f"{self.role}.{'api_key_env' if key_only else 'env_pass'}"
        raise ConfigError(
            f"environment variable{'s' if len(missing) > 1 else ''} {names} "
            f"not set in the worker's environment",
            field=field,
            hint=f"export {names} in the shell that runs the worker (semspec up / semspec "
            "worker) and restart it, or remove the name from the role",
        )

    def child_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The CLI's environment: the base set, the passed names and key, the fixed values."""
        names = (*self.passed, *((self.api_key_env,) if self.api_key_env else ()))
        return {**child_env(names, environ), **dict(self.fixed)}


def executable_name(argv: Sequence[str]) -> str:
    """The program ``argv`` runs, by name: behind ``env [OPTION]... [NAME=VALUE]...`` the one
    ``env`` starts, so that a step is named after the agent, not after ``env``."""
    if not argv:
        return ""
    args = list(argv)
    index = 0
    while index < len(args) and Path(args[index]).name == "env":
        index += 1
        while index < len(args):
            arg = args[index]
            if arg == "--":
                index += 1
                break
            if arg in _ENV_OPTIONS_WITH_VALUE:
                index += 2
            elif arg.startswith("-") or ("=" in arg and not arg.startswith("=")):
                index += 1
            else:
                break
    if index >= len(args):
        return Path(args[0]).name  # ``env`` alone prints the environment: it is the program
    return Path(args[index]).name
