"""Gate presets and their resolution against the project's ``gates`` config section.

A preset is ``configs/gates/<name>.yaml`` holding ``gates: [GateCommand, ...]``. Resolution takes
the preset's gates, applies ``overrides`` by name, then appends ``additional``; gate commands
therefore only ever come from config files, never from an agent.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from semspec.core.config.models import GateCommand, GateOverride, GatesConfig
from semspec.core.errors import ConfigError
from semspec.core.yaml_files import read_yaml
from semspec.model.shipped_configs import configs_dir
from semspec.workflow.gates.types import GateSpec

DEFAULT_PRESETS_DIR = configs_dir() / "gates"


def preset_path(preset: str, presets_dir: Path | None = None) -> Path:
    """Path of the YAML file of ``preset`` (whether or not it exists)."""
    return (presets_dir or DEFAULT_PRESETS_DIR) / f"{preset}.yaml"


def load_preset(preset: str, presets_dir: Path | None = None) -> list[GateSpec]:
    """Read and validate one preset file; any problem is a ConfigError naming the file."""
    path = preset_path(preset, presets_dir)
    shown = str(path)
    if not path.is_file():
        raise ConfigError(
            f"gate preset {preset!r} has no file",
            path=shown,
            field="gates.preset",
            hint="use one of python, go, node, rust or none",
        )
    data: Any = read_yaml(path).data
    if not isinstance(data, dict) or not isinstance(data.get("gates"), list):
        raise ConfigError("preset has no gate list", path=shown, expected="gates: [ ... ]")
    specs: list[GateSpec] = []
    for index, item in enumerate(data["gates"]):
        try:
            gate = GateCommand.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            field = f"gates[{index}].{where}" if where else f"gates[{index}]"
            raise ConfigError(first["msg"], path=shown, field=field) from exc
        _check_working_dir(gate.working_dir, field=f"gates[{index}].working_dir", path=shown)
        specs.append(_spec(gate))
    _reject_duplicates([s.name for s in specs], path=shown, field="gates")
    return specs


def resolve_gates(config: GatesConfig, presets_dir: Path | None = None) -> list[GateSpec]:
    """The gates to run, in order: preset gates with overrides applied, then ``additional``."""
    preset = [] if config.preset == "none" else load_preset(config.preset, presets_dir)
    names = [spec.name for spec in preset]
    for name, change in config.overrides.items():
        if change.working_dir is not None:
            _check_working_dir(change.working_dir, field=f"gates.overrides.{name}.working_dir")
        if name not in names:
            listed = ", ".join(names) if names else "(none)"
            raise ConfigError(
                f"no gate named {name!r} in preset {config.preset!r}",
                field=f"gates.overrides.{name}",
                hint=f"the preset's gates are: {listed}; add a new gate under gates.additional",
            )
    specs: list[GateSpec] = []
    for spec in preset:
        changed = (
            _override(spec, config.overrides[spec.name]) if spec.name in config.overrides else spec
        )
        if changed is not None:
            specs.append(changed)
    taken = {spec.name for spec in specs}
    for index, gate in enumerate(config.additional):
        if gate.name in taken:
            raise ConfigError(
                f"gate name {gate.name!r} is used twice",
                field=f"gates.additional[{index}].name",
                hint="give each gate its own name; to change a preset gate use gates.overrides",
            )
        taken.add(gate.name)
        _check_working_dir(gate.working_dir, field=f"gates.additional[{index}].working_dir")
        specs.append(_spec(gate))
    return specs


def _spec(gate: GateCommand) -> GateSpec:
    return GateSpec(
        name=gate.name,
        command=gate.command,
        required=gate.required,
        timeout_s=gate.timeout,
        working_dir=gate.working_dir,
        network=gate.network,
        format=gate.format or "",
        baseline=gate.baseline,
    )


def _override(spec: GateSpec, change: GateOverride) -> GateSpec | None:
    """``spec`` with the override's set fields applied, or None when it disables the gate."""
    if not change.enabled:
        return None
    return GateSpec(
        name=spec.name,
        command=change.command if change.command is not None else spec.command,
        required=change.required if change.required is not None else spec.required,
        timeout_s=change.timeout if change.timeout is not None else spec.timeout_s,
        working_dir=change.working_dir if change.working_dir is not None else spec.working_dir,
        network=change.network if change.network is not None else spec.network,
        # A new command keeps the format: output not in it is shown raw and judged by exit code.
        format=change.format if change.format is not None else spec.format,
        baseline=change.baseline if change.baseline is not None else spec.baseline,
    )


def _reject_duplicates(names: list[str], *, path: str | None, field: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(
                f"gate name {name!r} is used twice", path=path, field=field, hint="rename one"
            )
        seen.add(name)


def _check_working_dir(working_dir: str, *, field: str, path: str | None = None) -> None:
    """Catch an absolute or ``..`` working_dir early; the runner re-checks through symlinks."""
    parts = PurePosixPath(working_dir)
    if parts.is_absolute() or ".." in parts.parts:
        raise ConfigError(
            f"working_dir {working_dir!r} is outside the worktree",
            path=path,
            field=field,
            expected="a path relative to the worktree root, without '..'",
        )
