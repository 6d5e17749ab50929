"""What a role's ``provider`` and ``model`` may name, and the did-you-mean when they name neither.

The rule for model ids: an LLM role (``anthropic``, ``openai`` and its OpenAI-compatible kin)
without a ``base_url`` of its own, or with the vendor's (``api.openai.com``,
``api.anthropic.com``), must name a model id of the registry, because that is where its
endpoint, window and tokenizer come from. A role whose ``base_url`` points at a server the user
runs (Ollama, vLLM, a gateway) may name whatever that server serves, e.g. the Ollama tag
``qwen2.5-coder:32b``; such a model is sized with the default profile. ``scripted`` and
``command`` run no model semspec picks, so their ``model`` only names the profile the budget
check sizes the task by and is not checked.

This module is pure: the caller hands in the registry's ids, so the config layer never imports
the registry. What each provider name means is its row of ``core.provider_table``.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from semspec.core.config.models import RoleModel
from semspec.core.provider_table import PROVIDER_NAMES as PROVIDER_NAMES
from semspec.core.provider_table import VENDOR_HOSTS, provider_named


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` when one is close enough to be a likely typo."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return near[0] if near else None


@dataclass(frozen=True)
class RoleIssue:
    """One problem with a role: the key at fault, what is wrong, the expected form, a hint."""

    key: str
    message: str
    expected: str
    hint: str


def names_own_server(role: RoleModel) -> bool:
    """Whether the role's ``base_url`` points at a server other than the vendor's API."""
    if not role.base_url:
        return False
    return (urlsplit(role.base_url).hostname or "").lower() not in VENDOR_HOSTS


def registry_required(role: RoleModel) -> bool:
    """Whether ``role.model`` must be an id of the model registry (see the module docstring)."""
    spec = provider_named(role.provider)
    return (spec is None or spec.checks_model) and not names_own_server(role)


def _unknown(
    key: str, value: str, choices: Collection[str], expected: str, advice: str
) -> RoleIssue:
    near = did_you_mean(value, choices)
    lead = f"did you mean {near!r}? " if near else ""
    return RoleIssue(key, f"unknown {key} {value!r}", expected, lead + advice)


def provider_issue(role: RoleModel) -> RoleIssue | None:
    """The problem with ``role.provider``, or None when it is a known provider."""
    if provider_named(role.provider) is not None:
        return None
    expected = f"one of {', '.join(PROVIDER_NAMES)}"
    advice = "docs/providers.md shows each provider's settings"
    return _unknown("provider", role.provider, PROVIDER_NAMES, expected, advice)


def model_issue(role: RoleModel, model_ids: Collection[str]) -> RoleIssue | None:
    """The problem with ``role.model`` given the registry's ids, or None when it is usable."""
    if role.model in model_ids or not registry_required(role):
        return None
    expected = "a model id of the registry (`semspec models list`)"
    advice = (
        "add the model to .semspec/models.yaml, or set base_url when a server of your own serves it"
    )
    return _unknown("model", role.model, model_ids, expected, advice)


def role_issues(role: RoleModel, model_ids: Collection[str] | None) -> list[RoleIssue]:
    """Problems with ``role``; the model is checked only when ``model_ids`` is given."""
    issue = provider_issue(role)
    if issue is not None:
        return [issue]  # which models are valid depends on the provider
    if model_ids is None:
        return []
    issue = model_issue(role, model_ids)
    return [issue] if issue is not None else []
