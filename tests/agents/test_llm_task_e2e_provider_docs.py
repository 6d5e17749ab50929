"""The config snippets of ``docs/providers.md`` are valid: users paste them as they are."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.agents.factory import developer_agent, reviewer_agent
from semspec.agents.llm_factory import OPENAI_NAMES
from semspec.core.config.models import RoleModel, SemspecConfig
from semspec.model.registry import load_registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.M | re.S)
REQUIRED_SECTIONS = ("Ollama", "vLLM", "OpenAI", "Anthropic", "An external coding agent")
KNOWN_PROVIDERS = {*OPENAI_NAMES, "anthropic", "command", "scripted"}


def yaml_blocks_by_section() -> dict[str, list[str]]:
    """The ```yaml blocks of the document, grouped under their ``## `` heading."""
    blocks: dict[str, list[str]] = {}
    section = "(top)"
    for part in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.M):
        if not part.startswith("# "):  # the part before the first section is the title
            section = part.splitlines()[0].strip()
        blocks.setdefault(section, []).extend(FENCE.findall(part))
    return blocks


def config_snippets() -> list[tuple[str, dict[str, Any]]]:
    """(section, parsed YAML) of every block that configures roles under ``models:``."""
    found = []
    for section, texts in yaml_blocks_by_section().items():
        for text in texts:
            data = yaml.safe_load(text)
            roles = data.get("models", {}) if isinstance(data, dict) else {}
            if roles and set(roles) <= {"developer", "reviewer"}:
                found.append((section, data))
    return found


SNIPPETS = config_snippets()


def test_every_provider_section_has_a_config_snippet() -> None:
    sections = {section for section, _ in SNIPPETS}
    missing = [s for s in REQUIRED_SECTIONS if not any(x.startswith(s) for x in sections)]
    assert missing == []


@pytest.mark.parametrize(("section", "data"), SNIPPETS, ids=[s for s, _ in SNIPPETS])
def test_a_documented_snippet_validates_as_a_semspec_config(
    section: str, data: dict[str, Any]
) -> None:
    config = SemspecConfig.model_validate(data)
    for name in data["models"]:
        role: RoleModel = getattr(config.models, name)
        assert role.provider in KNOWN_PROVIDERS, f"{section}: {name}.provider"


@pytest.mark.parametrize(("section", "data"), SNIPPETS, ids=[s for s, _ in SNIPPETS])
def test_a_documented_role_names_a_registry_model_that_may_play_it(
    section: str, data: dict[str, Any], git_repo: Path
) -> None:
    registry = load_registry(git_repo)
    config = SemspecConfig.model_validate(data)
    for name in data["models"]:
        role: RoleModel = getattr(config.models, name)
        spec = registry.get(role.model)  # the task's budget check needs the entry
        assert spec.can(name), f"{section}: {role.model} may not play {name}"


def keyless_roles() -> list[tuple[str, str, RoleModel]]:
    """(section, role name, role) of documented roles that need no API key to be built."""
    roles = []
    for section, data in SNIPPETS:
        config = SemspecConfig.model_validate(data)
        for name, raw in data["models"].items():
            if raw["provider"] == "command" or ("base_url" in raw and "api_key_env" not in raw):
                roles.append((section, name, getattr(config.models, name)))
    return roles


KEYLESS = keyless_roles()


def test_the_local_and_command_sections_have_roles_that_need_no_key() -> None:
    assert {section.split()[0] for section, _, _ in KEYLESS} >= {"Ollama", "vLLM", "An"}


@pytest.mark.parametrize(
    ("section", "name", "role"), KEYLESS, ids=[f"{s}-{n}" for s, n, _ in KEYLESS]
)
def test_a_documented_role_without_a_key_builds_its_agent(
    section: str, name: str, role: RoleModel, git_repo: Path
) -> None:
    agent = (developer_agent if name == "developer" else reviewer_agent)(role, git_repo)
    assert hasattr(agent, "develop" if name == "developer" else "review"), section


def test_the_documented_registry_entry_adds_a_usable_model(git_repo: Path) -> None:
    texts = yaml_blocks_by_section()["Models the registry does not know"]
    (git_repo / ".semspec").mkdir(exist_ok=True)
    (git_repo / ".semspec" / "models.yaml").write_text(texts[0], encoding="utf-8")

    spec = load_registry(git_repo).get("qwen2.5-coder-14b")

    assert spec.wire_name == "qwen2.5-coder:14b"
    assert spec.endpoint.base_url == "http://127.0.0.1:11434/v1"
    assert spec.can("developer")
