"""Every YAML file semspec reads goes through one loader: errors name file, line and column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from semspec.agents.scripted import load_script
from semspec.client.plan_spec import draft_plan_from_yaml
from semspec.client.task_spec import draft_from_yaml
from semspec.core.config.loader import load_config
from semspec.core.errors import ConfigError
from semspec.core.yaml_files import deep_merge, parse_yaml
from semspec.knowledge.sources.sop_document import SopProblem, split_front_matter
from semspec.model.registry import load_registry

BROKEN = "title: add sub\ncriteria:\n  - [sub works\n"
"""Line 3 opens a list it never closes: the parser notices at the end (line 4, column 1)."""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(draft_from_yaml, id="task file"),
        pytest.param(draft_plan_from_yaml, id="plan file"),
        pytest.param(load_script, id="scripted-agent script"),
    ],
)
def test_a_file_that_is_not_yaml_is_named_with_its_line_and_column(
    tmp_path: Path, read: Callable[[Path], object]
) -> None:
    path = write(tmp_path / "input.yaml", BROKEN)
    with pytest.raises(ConfigError) as caught:
        read(path)
    assert caught.value.path == str(path)
    assert caught.value.line == 4
    assert str(caught.value).startswith(f"{path}:4: not valid YAML at column 1: expected ")


def test_the_config_file_names_the_column_too(tmp_path: Path) -> None:
    path = write(tmp_path / ".semspec" / "config.yaml", "loop:\n  max_retries: 3: 4\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert str(caught.value).startswith(f"{path}:2: not valid YAML at column 17: ")


def test_front_matter_lines_count_from_the_top_of_the_sop_file() -> None:
    text = "---\ncategory: sop\napplies_to: [unclosed\n---\nbody\n"
    with pytest.raises(
        SopProblem, match=r"^bad front matter \(line 4\): not valid YAML at column 1"
    ):
        split_front_matter(text)


def test_a_field_is_located_at_its_key_even_when_its_value_is_a_block(tmp_path: Path) -> None:
    path = write(tmp_path / ".semspec" / "models.yaml", "models:\n  gpt-4o:\n    - 128000\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert str(caught.value).startswith(f"{path}:2: models.gpt-4o: entry is not a mapping")


def test_line_of_falls_back_to_the_nearest_parent_that_exists() -> None:
    document = parse_yaml("loop:\n  max_retries: 3\ngates:\n  - name: test\n", "c.yaml")
    assert document.line_of(("loop", "max_retries")) == 2
    assert document.line_of(("gates", 0, "name")) == 4
    assert document.line_of(("gates", 5)) == 3
    assert document.line_of(("graph", "mode")) == 1


def test_deep_merge_lays_nested_mappings_over_each_other_key_by_key() -> None:
    base = {"context": {"window": 8, "sweet_spot": 4}, "tags": ["a"]}
    over = {"context": {"sweet_spot": 6}, "tags": ["b"]}
    assert deep_merge(base, over) == {"context": {"window": 8, "sweet_spot": 6}, "tags": ["b"]}
    assert base == {"context": {"window": 8, "sweet_spot": 4}, "tags": ["a"]}
