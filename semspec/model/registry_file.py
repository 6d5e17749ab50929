"""Read one ``models.yaml`` file into raw entries, keeping the YAML nodes for line numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semspec.core.errors import ConfigError
from semspec.core.yaml_files import Location, YamlDocument, read_yaml


@dataclass(frozen=True)
class RegistryFile:
    """The raw ``models`` mapping of one file and its YAML document (for locating fields)."""

    path: Path
    entries: dict[str, dict[str, Any] | None]
    document: YamlDocument

    def has(self, loc: Location) -> bool:
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
        document = read_yaml(path)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=shown) from exc
    raw = document.data
    if raw is None:
        return RegistryFile(path, {}, document)
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
            line = document.line_of(("models", str(ident)))
            raise ConfigError(
                "entry is not a mapping",
                path=shown,
                field=f"models.{ident}",
                line=line,
                expected="a mapping, or null to remove the model",
            )
        entries[str(ident)] = entry
    return RegistryFile(path, entries, document)
