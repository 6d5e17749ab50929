"""What the registry knows about one model: provider, endpoint, roles, tokenizer, cost, context.

These are pydantic models so a registry file is validated field by field; every field has a
docstring, which ``semspec models list`` and the error messages rely on.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from semspec.core.provider_table import PROVIDER_NAMES, provider_named

Role = Literal["developer", "reviewer"]
ROLES: tuple[Role, ...] = ("developer", "reviewer")


class _Entry(BaseModel):
    """Base of registry entries: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class Endpoint(_Entry):
    base_url: str | None = None
    """Base URL of the API (e.g. ``http://localhost:11434/v1``); unset = the vendor default."""
    api_key_env: str | None = None
    """NAME of the environment variable holding the API key; the key itself never goes here."""

    @field_validator("api_key_env")
    @classmethod
    def _name_not_key(cls, name: str | None) -> str | None:
        # A value that looks like a key is almost certainly a pasted secret, not a variable name.
        if name is not None and (name.startswith("sk-") or not name.replace("_", "").isalnum()):
            raise ValueError(
                "must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not a key"
            )
        return name


class Cost(_Entry):
    input_per_1m: float = Field(ge=0)
    """US dollars per one million input tokens."""
    output_per_1m: float = Field(ge=0)
    """US dollars per one million output tokens."""
    cached_input_per_1m: float | None = Field(default=None, ge=0)
    """US dollars per one million input tokens read from the prompt cache; null = input price."""
    cache_write_per_1m: float | None = Field(default=None, ge=0)
    """US dollars per one million input tokens written to the prompt cache; null = input price."""
    source: str | None = None
    """Where the prices were read (the vendor's pricing page); null = not recorded."""
    as_of: date | None = None
    """The date the prices were recorded (YYYY-MM-DD); null = not recorded."""

    @property
    def blended_per_1m(self) -> float:
        """Input plus output price, the single number used to break ranking ties."""
        return self.input_per_1m + self.output_per_1m


class ContextProfile(_Entry):
    context_window: int = Field(gt=0)
    """Theoretical maximum tokens (input plus output) the model accepts."""
    effective_context: int = Field(gt=0)
    """Tokens usable for input after the vendor's output reserve and fixed overhead."""
    sweet_spot: int = Field(gt=0)
    """Tokens of input up to which the model performs at its best (often a judgement)."""
    system_prompt_overhead: int = Field(ge=0)
    """Fixed tokens of the agent's system prompt and tool definitions."""
    recommended_max_file_tokens: int = Field(gt=0)
    """Upper bound on tokens of task files handed to the model in one task."""
    max_output_tokens: int | None = Field(default=None, gt=0)
    """Largest reply the vendor allows, when documented."""

    @model_validator(mode="after")
    def _ordered(self) -> ContextProfile:
        if self.effective_context > self.context_window:
            raise ValueError("effective_context must not exceed context_window")
        if self.sweet_spot > self.effective_context:
            raise ValueError("sweet_spot must not exceed effective_context")
        if self.recommended_max_file_tokens > self.sweet_spot:
            raise ValueError("recommended_max_file_tokens must not exceed sweet_spot")
        if self.system_prompt_overhead >= self.effective_context:
            raise ValueError("system_prompt_overhead must be below effective_context")
        return self


class ModelSpec(_Entry):
    id: str = Field(min_length=1)
    """Registry id (the key in ``models.yaml``), used in config and on the command line."""
    provider: str
    """Who serves it: a provider of ``core.provider_table`` (openai, anthropic,
    openai-compatible, ollama, vllm, command, scripted, ...)."""
    api_model: str | None = None
    """Model name sent to the provider when it differs from ``id`` (e.g. ``qwen2.5-coder:7b``)."""
    endpoint: Endpoint = Field(default_factory=Endpoint)
    """Where and how to reach the provider."""
    capabilities: tuple[Role, ...] = Field(min_length=1)
    """Roles the model may take: developer, reviewer."""
    tokenizer: str | None = None
    """tiktoken encoding name (``cl100k_base``, ``o200k_base``); null = counts are approximate."""
    cost: Cost | None = None
    """Price per million tokens, when known."""
    context: ContextProfile
    """Context window profile used by the budget and by assignment."""

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, name: str) -> str:
        if provider_named(name) is None:
            raise ValueError(f"must be one of {', '.join(PROVIDER_NAMES)}")
        return name

    @property
    def wire_name(self) -> str:
        """The name the provider's API expects."""
        return self.api_model or self.id

    def can(self, role: Role) -> bool:
        """Whether the model may take ``role``."""
        return role in self.capabilities
