"""Build developer and reviewer agents for the chat API providers and ``command``.

The lead's ``agents/factory.py`` handles ``scripted`` and calls these for everything else. A
role's explicit config wins over the model registry's entry, which wins over the defaults of
the provider's row in ``core.provider_table``; ``CHAT_CLIENTS`` builds the client a row's
``client`` names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from semspec.agents.command_developer import CommandDeveloper, CommandFencing
from semspec.agents.compaction.policy import ContextBudgetPolicy
from semspec.agents.evidence import EvidenceSource
from semspec.agents.llm_developer import DeveloperSettings, LLMDeveloper
from semspec.agents.llm_reviewer import LLMReviewer
from semspec.agents.protocol import DeveloperAgent, ReviewerAgent
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.core.config.loader import load_config
from semspec.core.config.models import RoleModel, SemspecConfig
from semspec.core.errors import ConfigError, NotFoundError, SemspecError
from semspec.core.provider_table import PROVIDER_NAMES, PROVIDERS, names_by_client, provider_named
from semspec.core.run_folder import run_dir_of
from semspec.core.sandbox import ChildLimits, loopback_address
from semspec.model.pricing import Price, price_of
from semspec.model.providers.anthropic_chat import AnthropicChatProvider
from semspec.model.providers.credentials import api_key_from_env, is_loopback_url
from semspec.model.providers.openai_chat import OpenAIChatProvider
from semspec.model.providers.types import ChatProvider

DEFAULT_WINDOW = 32_768
OPENAI_NAMES = frozenset(names_by_client("openai_chat"))
"""The providers the OpenAI chat-completions client serves."""


@dataclass(frozen=True)
class Resolved:
    """A role's effective connection settings after merging config and registry."""

    provider: str
    model: str
    base_url: str | None
    api_key_env: str | None
    window: int
    price: Price | None = None
    """The registry's price of the model; None when it has none or is not in the registry."""


def resolve(role: RoleModel, repo: Path) -> Resolved:
    """Merge ``role`` with the model registry entry of ``role.model`` when there is one."""
    base_url, key_env, window, wire = (
        role.base_url,
        role.api_key_env,
        role.context_window,
        role.model,
    )
    try:
        from semspec.model.registry import load_registry

        spec = load_registry(repo).get(role.model)
    except (ImportError, NotFoundError):
        spec = None  # not in the registry: the role's own fields must be enough
    if spec is not None:
        wire = spec.wire_name
        base_url = base_url or spec.endpoint.base_url
        key_env = key_env or spec.endpoint.api_key_env
        window = window or spec.context.effective_context
    row = provider_named(role.provider)
    if row is not None and not (row.key_env_only_without_base_url and base_url is not None):
        key_env = key_env or row.key_env  # e.g. the vendor endpoint always needs a key
    return Resolved(
        role.provider, wire, base_url, key_env, window or DEFAULT_WINDOW, price_of(spec)
    )


def chat_provider_for(role: RoleModel, repo: Path, *, field: str) -> tuple[ChatProvider, Resolved]:
    """The chat provider of ``role`` (``field`` names the config section in errors)."""
    row = provider_named(role.provider)
    make = CHAT_CLIENTS.get(row.client) if row is not None else None
    if row is None or make is None:
        raise ConfigError(
            f"unknown provider {role.provider!r}",
            field=f"{field}.provider",
            expected=", ".join(name for name in PROVIDER_NAMES if name != "scripted")
            + " (scripted is built by agents.factory)",
        )
    settings = resolve(role, repo)
    # A server on this machine (Ollama, vLLM, llama.cpp) may take no key, even when the
    # registry entry of the model it serves names one for the vendor's endpoint. A variable the
    # role itself names is the user saying the server wants a key: it must be set.
    local = (
        row.key_optional_on_loopback and is_loopback_url(settings.base_url) and not role.api_key_env
    )
    key = api_key_from_env(
        settings.api_key_env,
        field=f"{field}.api_key_env",
        required=row.key_required,
        optional=local,
    )
    return make(role, settings, key), settings


def _openai_chat(role: RoleModel, settings: Resolved, key: str | None) -> ChatProvider:
    return OpenAIChatProvider(
        model=settings.model,
        base_url=settings.base_url,
        api_key=key,
        timeout_s=role.timeout_s,
        temperature=role.temperature,
        name=role.provider,
    )


def _anthropic_chat(role: RoleModel, settings: Resolved, key: str | None) -> ChatProvider:
    return AnthropicChatProvider(
        model=settings.model,
        api_key=key or "",
        base_url=settings.base_url,
        timeout_s=role.timeout_s,
        temperature=role.temperature,
        max_output_tokens=role.max_output_tokens,
    )


ChatClientFactory = Callable[[RoleModel, Resolved, str | None], ChatProvider]
"""Builds a chat client from a role, its merged settings and its API key (None: no key)."""
CHAT_CLIENTS: Final[dict[str, ChatClientFactory]] = {
    "openai_chat": _openai_chat,
    "anthropic_chat": _anthropic_chat,
}
"""The client of each chat ``ClientKind`` of ``core.provider_table``; a test checks that every
row whose client is not ``command`` or ``scripted`` has one."""


def command_fencing(role: RoleModel, repo: Path) -> CommandFencing:
    """How the command developer runs: ``gates.sandbox``, the variables the role names, the
    run folder hidden.

    The task was checked at submit; a config broken since then falls back to the defaults.
    """
    try:
        config = load_config(repo)
    except SemspecError:
        config = SemspecConfig()
    return CommandFencing(
        config.gates.sandbox,
        tuple(role.env_pass),
        (run_dir_of(config, repo),),
        env_set=tuple((k, v.get_secret_value()) for k, v in role.env_set.items()),
        api_key_env=role.api_key_env,
        limits=ChildLimits.of(config.gates.limits),
        # Its model server's address when that is on loopback; no other port of this machine.
        reachable=tuple(filter(None, [loopback_address(role.base_url)])),
    )


def developer_for(role: RoleModel, repo: Path) -> DeveloperAgent:
    """The developer agent for ``role``: an LLM tool loop, or an external CLI for ``command``."""
    row = provider_named(role.provider)
    if row is not None and row.client == "command":
        if not role.command:
            raise ConfigError(
                "the command provider needs a command",
                field="models.developer.command",
                expected="e.g. 'claude -p' or 'aider --yes --message {prompt}'",
            )
        return CommandDeveloper(
            role.command,
            timeout_s=role.timeout_s,
            fencing=command_fencing(role, repo),
            model=role.model,
            price=resolve(role, repo).price,
        )
    provider, settings = chat_provider_for(role, repo, field="models.developer")
    return LLMDeveloper(
        provider,
        ContextBudgetPolicy.for_window(settings.window, role.max_output_tokens),
        DeveloperSettings(
            max_steps=role.max_steps,
            token_budget=role.token_budget,
            max_output_tokens=role.max_output_tokens,
            stabilization=StabilizationPolicy(gate_mode=role.read_gate),
        ),
        model=role.model,
        price=settings.price,
    )


def reviewer_for(
    role: RoleModel, repo: Path, evidence: EvidenceSource | None = None
) -> ReviewerAgent:
    """The reviewer agent for ``role``; ``evidence`` serves its one ``need_more_info`` step."""
    row = provider_named(role.provider)
    if row is not None and "reviewer" not in row.roles:
        players = [spec.name for spec in PROVIDERS if "reviewer" in spec.roles]
        raise ConfigError(
            f"the {role.provider} provider can only play the {', '.join(row.roles)}",
            field="models.reviewer.provider",
            expected=", ".join(players),
        )
    provider, settings = chat_provider_for(role, repo, field="models.reviewer")
    return LLMReviewer(
        provider,
        evidence,
        name=f"{role.provider}:{role.model}",
        max_output_tokens=role.max_output_tokens,
        model=role.model,
        price=settings.price,
    )
