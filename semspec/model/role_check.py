"""Check a role's provider and model against the repository's registry, before anything runs.

``semspec task submit`` (and ``plan submit``) call ``check_task_role`` so a task naming an unknown
model fails at submit with a did-you-mean; the worker's agent factory calls ``check_role`` so a
config edited after submit fails the same way instead of as an HTTP 404 from the provider. The
rule itself (which roles must name a registry id) is ``semspec.core.config.roles``, shared with
``semspec config validate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from semspec.core.config import config_path
from semspec.core.config.models import RoleModel
from semspec.core.config.roles import RoleIssue, registry_required, role_issues
from semspec.core.errors import ConfigError, TaskSpecError
from semspec.model.registry import load_registry


def role_problem(role: RoleModel, repo: Path) -> RoleIssue | None:
    """The first problem with ``role``; the registry is read only when the role needs it."""
    model_ids = load_registry(repo).ids if registry_required(role) else None
    issues = role_issues(role, model_ids)
    return issues[0] if issues else None


def _config_error(issue: RoleIssue, repo: Path, name: str) -> ConfigError:
    return ConfigError(
        issue.message,
        path=str(config_path(repo)),
        field=f"models.{name}.{issue.key}",
        expected=issue.expected,
        hint=issue.hint,
    )


def check_role(role: RoleModel, repo: Path, *, name: str) -> None:
    """Raise ``ConfigError`` at ``models.<name>.<key>`` when ``role`` cannot be run."""
    issue = role_problem(role, repo)
    if issue is not None:
        raise _config_error(issue, repo, name)


def check_task_role(
    configured: RoleModel, override: Mapping[str, Any], repo: Path, *, name: str
) -> None:
    """Check the role a task runs with: the config's, with the task file's ``provider`` and
    ``model`` on top. A problem in a value the task file set is a ``TaskSpecError`` at
    ``<name>.<key>``; one in the config's value is a ``ConfigError`` naming the config."""
    update = {key: str(override[key]) for key in ("provider", "model") if override.get(key)}
    issue = role_problem(configured.model_copy(update=update), repo)
    if issue is None:
        return
    if issue.key in update:
        message = f"{issue.message} (expected {issue.expected})"
        raise TaskSpecError(message, field=f"{name}.{issue.key}", hint=issue.hint)
    raise _config_error(issue, repo, name)
