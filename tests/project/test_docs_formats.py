"""The format pages of ``docs/`` show complete examples that the real loaders accept, and the
README's config examples pass ``semspec config validate`` with its registry check."""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from semspec.agents.scripted import Script, load_script
from semspec.cli.app import app
from semspec.client.plan_spec import _PLAN_KEYS, load_plan
from semspec.client.plan_spec import _TASK_KEYS as _PLAN_TASK_KEYS
from semspec.client.task_spec import _ROLE_KEYS, _TASK_KEYS, build_task_input, draft_from_yaml
from semspec.core.config.models import SemspecConfig
from semspec.model.registry import load_registry
from tests.support.repos import make_repo

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
FORMAT_PAGES = ("scripted-agent.md", "task-yaml.md", "plan-yaml.md", "sops.md")


def complete_example(page: str) -> str:
    """The first YAML block under the page's ``## A complete example`` heading."""
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split("\n## A complete example\n", 1)
    assert len(section) == 2, f"{page} has no '## A complete example' section"
    found = FENCE.search(section[1])
    assert found is not None, f"{page}: no yaml block in its complete example"
    return found.group(1)


def keys_in(data: Any) -> Iterator[str]:
    """Every mapping key anywhere in parsed YAML."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from keys_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from keys_in(item)


def model_keys(model: type[BaseModel]) -> Iterator[str]:
    """Every field name of ``model`` and of the models nested in it."""
    for name, info in model.model_fields.items():
        yield name
        for arg in typing.get_args(info.annotation) or (info.annotation,):
            inner = typing.get_args(arg) or (arg,)
            for candidate in inner:
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    yield from model_keys(candidate)


def sample_repo(path: Path) -> Path:
    """A repository holding the files the task and plan examples name."""
    make_repo(
        path,
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "tests/test_calc.py": "from calc import add\n\nassert add(1, 2) == 3\n",
        },
    )
    return path


def write_example(folder: Path, page: str, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_text(complete_example(page), encoding="utf-8")
    return target


def test_the_script_example_loads_and_shows_every_key(tmp_path: Path) -> None:
    script = load_script(write_example(tmp_path, "scripted-agent.md", "task-script.yaml"))

    assert [i.reviewer.verdict for i in script.iterations if i.reviewer] == [
        "request_changes",
        "need_more_info",
    ]
    shown = set(keys_in(yaml.safe_load(complete_example("scripted-agent.md"))))
    # `write` maps file names, so every key under it is also "shown"; only the schema matters.
    assert set(model_keys(Script)) - shown == set()


def test_the_task_example_builds_a_task_and_shows_every_key(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "repo")
    folder = tmp_path / "tasks"
    write_example(folder, "scripted-agent.md", "task-script.yaml")
    task_file = write_example(folder, "task-yaml.md", "task.yaml")

    inp = build_task_input(draft_from_yaml(task_file), SemspecConfig(), repo)

    spec = inp.spec
    assert (spec.task_id, spec.plan_id, spec.base_branch) == (
        "add-subtraction",
        "arithmetic",
        "main",
    )
    assert spec.task_files == ["calc.py", "tests/test_calc.py"]
    assert len(spec.criteria) == 2 and spec.description.startswith("calc.py has add()")
    assert spec.developer.script == str((folder / "task-script.yaml").resolve())
    assert (spec.reviewer.provider, spec.reviewer.model) == ("anthropic", "claude-haiku-4-5")
    raw = yaml.safe_load(complete_example("task-yaml.md"))
    assert _TASK_KEYS - set(raw) == set()
    assert _ROLE_KEYS - set(raw["developer"]) == set()


def test_the_plan_example_loads_in_dependency_order_and_shows_every_key(tmp_path: Path) -> None:
    repo = sample_repo(tmp_path / "repo")
    folder = tmp_path / "plans"
    write_example(folder, "scripted-agent.md", "task-script.yaml")
    plan_file = write_example(folder, "plan-yaml.md", "plan.yaml")

    plan = load_plan(plan_file, SemspecConfig(), repo)

    assert plan.plan_id == "arithmetic"
    assert [(t.input.spec.task_id, t.depends_on) for t in plan.tasks] == [
        ("add-sub", []),
        ("add-mul", ["add-sub"]),
    ]
    assert {t.input.spec.plan_id for t in plan.tasks} == {"arithmetic"}
    raw = yaml.safe_load(complete_example("plan-yaml.md"))
    assert _PLAN_KEYS - set(raw) == set()
    assert _PLAN_TASK_KEYS - set(keys_in(raw["tasks"])) == set()


def readme_configs() -> list[str]:
    """The README's YAML blocks that configure semspec (all of them are config examples)."""
    blocks = FENCE.findall(README.read_text(encoding="utf-8"))
    assert blocks, "the README has no yaml example"
    return blocks


@pytest.mark.parametrize("text", readme_configs(), ids=lambda t: t.split(":", 1)[0])
def test_a_readme_config_example_passes_config_validate_with_the_registry(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / ".semspec").mkdir()
    (tmp_path / ".semspec" / "config.yaml").write_text(text, encoding="utf-8")
    unset = {k: None for k in os.environ if k.startswith("SEMSPEC_")}

    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "config", "validate"], env=unset)

    assert result.exit_code == 0, result.stderr
    registry = load_registry(tmp_path)
    for name, role in (yaml.safe_load(text).get("models") or {}).items():
        # Stronger than the rule: an example should name models semspec knows how to size.
        assert role["model"] in registry, f"README models.{name}.model is not in the registry"


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{p}" for p in FORMAT_PAGES[:3])])
def test_links_of_the_format_pages_lead_to_existing_files(page: str) -> None:
    source = ROOT / page
    targets = [t for t in LINK.findall(source.read_text(encoding="utf-8")) if "://" not in t]
    missing = [t for t in targets if not (source.parent / t).exists()]
    assert missing == []


def test_the_readme_links_every_format_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert [p for p in FORMAT_PAGES if f"(docs/{p})" not in text] == []
