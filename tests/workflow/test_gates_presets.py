"""Resolving gate presets, overrides and additional gates from the ``gates`` config section."""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.core.config.models import GateCommand, GateOverride, GatesConfig
from semspec.core.errors import ConfigError
from semspec.workflow.gates import DEFAULT_PRESETS_DIR, GateSpec, load_preset, resolve_gates

PRESETS = ["python", "go", "node", "rust"]


@pytest.mark.parametrize("preset", PRESETS)
def test_each_shipped_preset_loads_and_validates(preset: str) -> None:
    specs = load_preset(preset)
    assert specs, f"{preset} preset has no gates"
    assert all(spec.command and spec.timeout_s > 0 for spec in specs)
    assert any(spec.required for spec in specs)


def test_presets_are_found_beside_the_source_tree() -> None:
    assert sorted(p.stem for p in DEFAULT_PRESETS_DIR.glob("*.yaml")) == sorted(PRESETS)


def test_go_preset_builds_tests_and_vets() -> None:
    commands = {spec.name: spec.command for spec in load_preset("go")}
    assert commands == {
        "build": "go build ./...",
        "test": "go test -json ./...",
        "vet": "go vet ./...",
    }


def test_preset_none_gives_only_the_additional_gates() -> None:
    config = GatesConfig(preset="none", additional=[GateCommand(name="unit", command="true")])
    assert resolve_gates(config) == [GateSpec("unit", "true", True, 600.0, ".")]


def test_override_changes_only_the_fields_it_sets() -> None:
    config = GatesConfig(
        preset="python", overrides={"test": GateOverride(command="pytest -x", timeout=30)}
    )
    test_gate = next(s for s in resolve_gates(config) if s.name == "test")
    assert test_gate == GateSpec("test", "pytest -x", True, 30.0, ".", format="pytest")


def test_override_with_enabled_false_drops_the_preset_gate() -> None:
    config = GatesConfig(preset="python", overrides={"lint": GateOverride(enabled=False)})
    assert [s.name for s in resolve_gates(config)] == ["test"]


def test_additional_gates_run_after_the_preset_gates() -> None:
    config = GatesConfig(
        preset="go", additional=[GateCommand(name="fmt", command="gofmt -l .", required=False)]
    )
    assert [s.name for s in resolve_gates(config)] == ["build", "test", "vet", "fmt"]


def test_override_of_an_unknown_gate_names_the_field_and_lists_the_presets_gates() -> None:
    config = GatesConfig(preset="python", overrides={"bulid": GateOverride(command="make")})
    with pytest.raises(ConfigError) as caught:
        resolve_gates(config)
    assert caught.value.field == "gates.overrides.bulid"
    assert caught.value.hint is not None and "test, lint" in caught.value.hint


def test_additional_gate_reusing_a_preset_name_is_a_config_error() -> None:
    config = GatesConfig(preset="python", additional=[GateCommand(name="test", command="make")])
    with pytest.raises(ConfigError) as caught:
        resolve_gates(config)
    assert caught.value.field == "gates.additional[0].name"


def test_two_additional_gates_with_one_name_are_a_config_error() -> None:
    twice = [GateCommand(name="x", command="true"), GateCommand(name="x", command="false")]
    with pytest.raises(ConfigError) as caught:
        resolve_gates(GatesConfig(additional=twice))
    assert caught.value.field == "gates.additional[1].name"


def test_working_dir_with_dotdot_is_refused_when_resolving() -> None:
    config = GatesConfig(additional=[GateCommand(name="x", command="true", working_dir="../up")])
    with pytest.raises(ConfigError, match="outside the worktree") as caught:
        resolve_gates(config)
    assert caught.value.field == "gates.additional[0].working_dir"


def test_missing_preset_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_gates(GatesConfig(preset="rust"), presets_dir=tmp_path)
    assert caught.value.path == str(tmp_path / "rust.yaml")
    assert caught.value.field == "gates.preset"


def test_preset_file_that_is_not_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "go.yaml").write_text("gates:\n  - name: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_preset("go", tmp_path)
    assert caught.value.path == str(tmp_path / "go.yaml")
    assert caught.value.line is not None


def test_preset_gate_with_an_unknown_key_names_the_gate_and_key(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(
        "gates:\n  - name: test\n    command: npm test\n    retries: 2\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load_preset("node", tmp_path)
    assert caught.value.field == "gates[0].retries"


def test_preset_file_without_a_gate_list_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "python.yaml").write_text("- just a list\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no gate list"):
        load_preset("python", tmp_path)


def test_preset_file_with_a_repeated_gate_name_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "go.yaml").write_text(
        "gates:\n  - {name: a, command: 'true'}\n  - {name: a, command: 'false'}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="used twice") as caught:
        load_preset("go", tmp_path)
    assert caught.value.path == str(tmp_path / "go.yaml")
