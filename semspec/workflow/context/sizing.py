"""How big a task a role's model may take: one answer for the worker's budget check,
``semspec budget`` and ``semspec models list``.

A role is sized by its registry entry; a model the registry does not hold (a role whose
``base_url`` is the user's own server may name any model, ``semspec.core.config.roles``) is
sized by the default profile, the ``scripted`` entry, shaped like a current mid-size model. The
configured ``models.<role>.context_window`` wins over either window. The output reserve is the
profile's largest reply, capped at ``OUTPUT_RESERVE`` (ADR-004 "Context Budget Model": an
estimate of one reply, not the vendor's maximum). Pure: no I/O, safe for workflow code.
"""

from __future__ import annotations

from dataclasses import dataclass

from semspec.core.config.models import ContextConfig, RoleModel
from semspec.model.profiles import ContextProfile, ModelSpec
from semspec.model.registry import ModelRegistry
from semspec.workflow.context.budget import BudgetReport, compute_budget

DEFAULT_PROFILE_MODEL = "scripted"
"""Registry entry whose profile sizes a model the registry does not hold."""
OUTPUT_RESERVE = 4_000
"""Largest output estimate a budget holds back for one reply."""


@dataclass(frozen=True)
class SizedRole:
    """The numbers a role's model is sized by, and where they come from."""

    model: str
    """The model the role names."""
    spec: ModelSpec
    """The registry entry whose profile is used (the default one for an unregistered model)."""
    profile: ContextProfile
    """That profile with the configured window, when one is configured."""
    note: str | None
    """Why another model's profile is used, when it is."""

    @property
    def output_reserve(self) -> int:
        """Tokens held back for the reply."""
        return min(self.profile.max_output_tokens or OUTPUT_RESERVE, OUTPUT_RESERVE)


def size_role(role: RoleModel, registry: ModelRegistry) -> SizedRole:
    """The profile ``role`` is sized by: its registry entry, else the default profile."""
    note = None
    if role.model in registry:
        spec = registry.get(role.model)
    else:
        spec = registry.get(DEFAULT_PROFILE_MODEL)
        note = (
            f"model {role.model!r} is not in the registry; sized with the default profile "
            f"{DEFAULT_PROFILE_MODEL!r} (add it to .semspec/models.yaml for exact numbers)"
        )
    profile = spec.context
    if role.context_window:
        profile = profile.model_copy(update={"context_window": role.context_window})
    return SizedRole(role.model, spec, profile, note)


def task_budget(
    sized: SizedRole,
    config: ContextConfig,
    file_tokens: dict[str, int],
    *,
    task_tokens: int = 0,
    plan_tokens: int = 0,
    system_tokens: int | None = None,
    output_tokens: int | None = None,
) -> BudgetReport:
    """The budget of a task for ``sized``; unset system and output tokens are the profile's."""
    system = sized.profile.system_prompt_overhead if system_tokens is None else system_tokens
    output = sized.output_reserve if output_tokens is None else output_tokens
    return compute_budget(
        sized.profile, system, plan_tokens, task_tokens, output, file_tokens, config
    )


def file_limit(sized: SizedRole, config: ContextConfig) -> int:
    """Tokens of task files the model takes in one task with no other context."""
    return task_budget(sized, config, {}).file_token_limit


def raise_limit_hint(
    sized: SizedRole, report: BudgetReport, config: ContextConfig, role: str
) -> str:
    """The settings that raise the file limit that bound ``report``, named as people set them."""
    profile = sized.profile
    entry = f".semspec/models.yaml: models.{sized.spec.id}.context"
    if report.file_token_limit >= profile.recommended_max_file_tokens:
        return (
            f"the model's recommended_max_file_tokens ({profile.recommended_max_file_tokens:,}) "
            f"is the limit: raise it in {entry}.recommended_max_file_tokens (at most its "
            "sweet_spot), or pick a model with a larger profile"
        )
    return (
        f"the limit is {config.max_file_share:.0%} of working memory: raise the window with "
        f"models.{role}.context_window in .semspec/config.yaml (or {entry}.context_window), "
        "or the share with context.max_file_share"
    )
