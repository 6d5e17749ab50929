"""Read one ``models.yaml`` file into raw entries, keeping the YAML nodes for line numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from semspec.core.errors import ConfigError


@dataclass(frozen=True)
class RegistryFile:
    """The raw ``models`` mapping of one file and its YAML tree (for locating fields)."""

    path: Path
    entries: dict[str, dict[str, Any] | None]
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """1-based line of the node at ``loc`` (or its nearest existing parent)."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for key in loc:
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if k.value == str(key)), None)
                if pair is None:
                    return line
                node = pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    return line
                node = node.value[key]
            else:
                return line
            line = node.start_mark.line + 1
        return line

    def has(self, loc: tuple[str | int, ...]) -> bool:
        """Whether this file itself sets the field at ``loc`` (under ``models``)."""
        probe: Any = {"models": self.entries}
        for key in loc:
            in_dict = isinstance(probe, dict) and key in probe
            in_list = isinstance(probe, list) and isinstance(key, int) and key < len(probe)
            if not (in_dict or in_list):
                return False
            probe = probe[key]
        return True


def read_registry_file(path: Path) -> RegistryFile:
    """Parse ``path``; a file that is not YAML or has no ``models`` mapping is a ConfigError."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=shown) from exc
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
            path=shown,
            line=mark.line + 1 if mark is not None else None,
            hint="fix the YAML syntax at that line",
        ) from exc
    if raw is None:
        return RegistryFile(path, {}, root)
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) - {"models"} or not isinstance(models, dict):
        raise ConfigError(
            "top level must be a single `models:` mapping of model id to entry",
            path=shown,
            line=1,
            expected="models: {<id>: {provider: ..., context: {...}}}",
        )
    entries: dict[str, dict[str, Any] | None] = {}
    for ident, entry in models.items():
        if entry is not None and not isinstance(entry, dict):
            line = RegistryFile(path, {}, root).line_of(("models", str(ident)))
            raise ConfigError(
                "entry is not a mapping",
                path=shown,
                field=f"models.{ident}",
                line=line,
                expected="a mapping, or null to remove the model",
            )
        entries[str(ident)] = entry
    return RegistryFile(path, entries, root)
