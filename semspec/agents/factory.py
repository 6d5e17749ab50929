"""Build the agent that plays a role from the provider named in the config or task."""

from __future__ import annotations

from pathlib import Path

from semspec.agents.protocol import DeveloperAgent, ReviewerAgent
from semspec.agents.scripted import ScriptedDeveloper, ScriptedReviewer, load_script
from semspec.core.config.models import RoleModel
from semspec.core.errors import InputError
from semspec.core.provider_table import provider_named
from semspec.model.role_check import check_role


def _client(role: RoleModel) -> str | None:
    """What plays ``role``: its provider's ``client`` in ``core.provider_table``."""
    row = provider_named(role.provider)
    return row.client if row is not None else None


def _script_path(role: RoleModel, repo: Path, role_name: str) -> Path:
    if not role.script:
        raise InputError(
            f"the scripted {role_name} needs a script",
            hint=f"set models.{role_name}.script in .semspec/config.yaml or pass --script",
        )
    path = Path(role.script)
    return path if path.is_absolute() else repo / path


def developer_agent(role: RoleModel, repo: Path) -> DeveloperAgent:
    """The developer for ``role``: scripted here, LLM-backed providers through their factory."""
    check_role(role, repo, name="developer")
    if _client(role) == "scripted":
        return ScriptedDeveloper(load_script(_script_path(role, repo, "developer")))
    from semspec.agents import llm_factory

    return llm_factory.developer_for(role, repo)


def reviewer_agent(role: RoleModel, repo: Path, followup: bool = False) -> ReviewerAgent:
    """The reviewer for ``role``; ``followup`` selects a scripted second opinion."""
    check_role(role, repo, name="reviewer")
    if _client(role) == "scripted":
        return ScriptedReviewer(load_script(_script_path(role, repo, "reviewer")), followup)
    from semspec.agents import llm_factory

    return llm_factory.reviewer_for(role, repo)
