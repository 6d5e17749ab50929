"""The context window of a role: one answer for the budget check, the pressure tracker, the
reviewer's context assembly and ``semspec review context``.

Order: the role's ``models.<role>.context_window`` in the config, else the registry entry of the
role's model, else the registry's default profile (``sizing.DEFAULT_PROFILE_MODEL``, as the
budget check sizes an unregistered model), else ``DEFAULT_WINDOW``.
"""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import RoleModel
from semspec.core.errors import SemspecError
from semspec.model.registry import ModelRegistry, load_registry
from semspec.workflow.context.sizing import DEFAULT_PROFILE_MODEL

DEFAULT_WINDOW = 32_768
"""Window of a model the config and the registry (without a default profile) leave unsized."""


def role_window(role: RoleModel, registry: ModelRegistry | None) -> int:
    """Context window in tokens for ``role`` (config override, registry entry, default)."""
    if role.context_window:
        return role.context_window
    if registry is not None:
        for entry in (role.model, DEFAULT_PROFILE_MODEL):
            if entry in registry:
                return registry.get(entry).context.context_window
    return DEFAULT_WINDOW


def role_window_in(repo: Path, role: RoleModel) -> int:
    """``role_window`` with the repository's registry; an unreadable registry counts as none."""
    try:
        registry: ModelRegistry | None = load_registry(repo)
    except SemspecError:
        registry = None
    return role_window(role, registry)
