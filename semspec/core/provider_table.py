"""The LLM providers a role may name, one row each: what every part of semspec reads about them.

Readers:

- ``core.config.roles``: which names a role's ``provider`` may take, whose ``model`` must be a
  registry id, and which hosts are a vendor's own API;
- ``model.profiles``: which names a registry entry's ``provider`` may take;
- ``agents.llm_factory``: the key variable a role reads when it names none, whether the key is
  required, and the client that talks to the model (``CHAT_CLIENTS``, keyed by ``client``);
- ``agents.factory``: ``scripted`` and ``command`` build their own agents.

It sits on the ground floor because the config checks a role's provider when it loads; the
clients are built on the agents floor, which may import them. Adding a provider:
``CONTRIBUTING.md``, "Add an LLM provider".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

ClientKind = Literal["openai_chat", "anthropic_chat", "command", "scripted"]
"""What plays the role: a chat API client driven by semspec's own agents (``openai_chat``,
``anthropic_chat``), an external agent CLI (``command``) or a script (``scripted``)."""
CLIENT_WORDS: Final[dict[ClientKind, str]] = {
    "openai_chat": "OpenAI chat completions API",
    "anthropic_chat": "Anthropic Messages API",
    "command": "an agent CLI run in the worktree",
    "scripted": "a YAML script (tests, demo)",
}
"""How ``docs/providers.md``'s provider table names each client."""


@dataclass(frozen=True)
class ProviderSpec:
    """One provider a role may name."""

    name: str
    """What ``models.<role>.provider`` says."""
    client: ClientKind
    """What talks to the model (see ``ClientKind``)."""
    key_env: str | None = None
    """The variable the API key is read from when neither the role nor the registry names one."""
    key_env_only_without_base_url: bool = False
    """Whether ``key_env`` applies only to a role without a ``base_url`` (the vendor's API)."""
    key_required: bool = False
    """Whether a role must have an API key variable at all."""
    key_optional_on_loopback: bool = False
    """Whether a server on this machine may take no key, unless the role names a variable."""
    vendor_host: str | None = None
    """The host of the vendor's own API: a role pointing there must name a registry model."""
    checks_model: bool = True
    """Whether the role's ``model`` must be a registry id (unless it names a server of its own)."""
    roles: tuple[str, ...] = ("developer", "reviewer")
    """The roles it can play."""


def _openai_compatible(name: str) -> ProviderSpec:
    """A server speaking OpenAI's chat completions API (Ollama, vLLM, a gateway)."""
    return ProviderSpec(name, "openai_chat", key_optional_on_loopback=True)


PROVIDERS: Final[tuple[ProviderSpec, ...]] = (
    ProviderSpec(
        "openai",
        "openai_chat",
        key_env="OPENAI_API_KEY",
        key_env_only_without_base_url=True,
        key_optional_on_loopback=True,
        vendor_host="api.openai.com",
    ),
    _openai_compatible("openai-compatible"),
    _openai_compatible("ollama"),
    _openai_compatible("vllm"),
    _openai_compatible("lmstudio"),
    _openai_compatible("llamacpp"),
    ProviderSpec(
        "anthropic",
        "anthropic_chat",
        key_env="ANTHROPIC_API_KEY",
        key_required=True,
        vendor_host="api.anthropic.com",
    ),
    ProviderSpec("command", "command", checks_model=False, roles=("developer",)),
    ProviderSpec("scripted", "scripted", checks_model=False),
)
"""Every provider, in the order error messages and docs list them."""

PROVIDER_NAMES: Final[tuple[str, ...]] = tuple(spec.name for spec in PROVIDERS)
VENDOR_HOSTS: Final[frozenset[str]] = frozenset(
    spec.vendor_host for spec in PROVIDERS if spec.vendor_host
)


def provider_named(name: str) -> ProviderSpec | None:
    """The row of the provider called ``name``, or None when no provider is."""
    return next((spec for spec in PROVIDERS if spec.name == name), None)


def names_by_client(client: ClientKind) -> tuple[str, ...]:
    """The providers served by ``client``, e.g. every OpenAI-compatible name."""
    return tuple(spec.name for spec in PROVIDERS if spec.client == client)
