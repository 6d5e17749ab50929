"""The provider table drives every part that names an LLM provider: the config's check of a
role, the registry's check of an entry, the key a role reads, the client that is built, and the
provider table of ``docs/providers.md`` (``core.provider_table``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.agents.llm_factory import CHAT_CLIENTS, chat_provider_for, resolve
from semspec.core.config.models import RoleModel
from semspec.core.config.roles import provider_issue, registry_required
from semspec.core.provider_table import CLIENT_WORDS, PROVIDERS, ProviderSpec
from semspec.model.profiles import ModelSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
CHAT_ROWS = [spec for spec in PROVIDERS if spec.client not in ("command", "scripted")]
KEY = "SEMSPEC_TEST_PROVIDER_TABLE_KEY"
"""Not a real key: a variable the test sets so rows that require a key can be built."""


def docs_row(spec: ProviderSpec) -> str:
    """The line of ``docs/providers.md``'s provider table a provider must have."""
    key = f"`{spec.key_env}`" if spec.key_env else "none"
    if spec.key_env and spec.key_env_only_without_base_url:
        key += " without `base_url`"
    if spec.key_env and spec.key_optional_on_loopback:
        key += "; a server on this machine may take none"
    return f"| `{spec.name}` | {CLIENT_WORDS[spec.client]} | {key} | {', '.join(spec.roles)} |"


def test_the_table_names_each_provider_once() -> None:
    names = [spec.name for spec in PROVIDERS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("spec", PROVIDERS, ids=lambda spec: spec.name)
def test_every_provider_is_one_a_role_and_a_registry_entry_may_name(spec: ProviderSpec) -> None:
    assert provider_issue(RoleModel(provider=spec.name, model="m")) is None
    assert registry_required(RoleModel(provider=spec.name, model="m")) == spec.checks_model
    entry = ModelSpec.model_validate(
        {
            "id": "m",
            "provider": spec.name,
            "capabilities": ["developer"],
            "context": {
                "context_window": 8000,
                "effective_context": 7000,
                "sweet_spot": 6000,
                "system_prompt_overhead": 500,
                "recommended_max_file_tokens": 2000,
            },
        }
    )
    assert entry.provider == spec.name


def test_a_provider_outside_the_table_is_refused_by_config_and_registry() -> None:
    issue = provider_issue(RoleModel(provider="olama", model="m"))
    assert issue is not None and issue.hint.startswith("did you mean 'ollama'?")
    assert issue.expected == "one of " + ", ".join(spec.name for spec in PROVIDERS)
    with pytest.raises(ValueError, match="must be one of openai, openai-compatible"):
        ModelSpec.model_validate({"id": "m", "provider": "olama", "capabilities": ["developer"]})


def test_every_chat_client_kind_has_a_factory_and_every_factory_a_row() -> None:
    assert {spec.client for spec in CHAT_ROWS} == set(CHAT_CLIENTS)
    assert set(CLIENT_WORDS) >= {spec.client for spec in PROVIDERS}


@pytest.mark.parametrize("spec", CHAT_ROWS, ids=lambda spec: spec.name)
def test_every_chat_row_builds_its_client_with_the_rows_key_variable(
    spec: ProviderSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY, "not-a-real-key")
    role = RoleModel(
        provider=spec.name, model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY
    )
    provider, settings = chat_provider_for(role, tmp_path, field="models.developer")
    assert provider is not None and settings.api_key_env == KEY
    plain = resolve(RoleModel(provider=spec.name, model="m"), tmp_path)
    assert plain.api_key_env == spec.key_env


def test_the_docs_provider_table_is_the_table() -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("| provider | talks to | key variable when none is named | roles |")
    rows = lines[start + 2 : start + 2 + len(PROVIDERS) + 1]
    assert rows == [*(docs_row(spec) for spec in PROVIDERS), ""]
