"""The model registry: ``configs/models.yaml`` overridden entry by entry by the repository's own.

An entry in ``<repo>/.semspec/models.yaml`` with the id of a shipped model is merged over it key
by key (so ``{context: {sweet_spot: 24000}}`` changes only that number); a new id adds a model
and must be complete; ``<id>: null`` removes a shipped model.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from semspec.core.errors import ConfigError, NotFoundError
from semspec.core.yaml_files import deep_merge
from semspec.model.profiles import ModelSpec, Role
from semspec.model.registry_file import RegistryFile, read_registry_file
from semspec.model.shipped_configs import configs_dir

DEFAULT_MODELS_PATH = configs_dir() / "models.yaml"
OVERRIDE_RELATIVE = Path(".semspec") / "models.yaml"


class ModelRegistry:
    """Validated model specs by id, in a stable (sorted) order."""

    def __init__(self, specs: Mapping[str, ModelSpec]) -> None:
        self._specs = dict(sorted(specs.items()))

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, ident: object) -> bool:
        return ident in self._specs

    @property
    def ids(self) -> list[str]:
        """Every model id, sorted."""
        return list(self._specs)

    def get(self, ident: str) -> ModelSpec:
        """The spec of ``ident``; an unknown id raises NotFoundError naming near matches."""
        spec = self._specs.get(ident)
        if spec is not None:
            return spec
        near = difflib.get_close_matches(ident, self._specs, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        raise NotFoundError(
            "model",
            ident,
            hint=f"{hint}run `semspec models list` to see all, or add it to {OVERRIDE_RELATIVE}",
        )

    def for_role(self, role: Role) -> list[ModelSpec]:
        """Models that may take ``role``, sorted by id."""
        return [spec for spec in self if spec.can(role)]


def _validate(ident: str, raw: Mapping[str, Any], files: list[RegistryFile]) -> ModelSpec:
    """Validate one merged entry, blaming the last file that set the offending field."""
    try:
        return ModelSpec.model_validate({**raw, "id": ident})
    except ValidationError as err:
        item = err.errors()[0]
        loc: tuple[str | int, ...] = ("models", ident, *item["loc"])
        blamed = next((f for f in reversed(files) if f.has(loc)), None)
        if blamed is None:  # a missing field: blame the file(s) defining the entry
            blamed = next(f for f in reversed(files) if f.has(("models", ident)))
        field = ".".join(str(part) for part in loc)
        raise ConfigError(
            item["msg"] if item["type"] != "extra_forbidden" else "unknown key",
            path=str(blamed.path),
            field=field,
            line=blamed.document.line_of(loc),
            hint="see configs/models.yaml for the documented form of an entry",
        ) from None


def load_registry(
    repo: Path | None = None, default_path: Path = DEFAULT_MODELS_PATH
) -> ModelRegistry:
    """Load the shipped registry and apply ``<repo>/.semspec/models.yaml`` when it exists.

    Parsed registries are cached by the files' paths, sizes and modification times, so the
    loop's activities can ask for it every iteration without re-reading YAML.
    """
    paths = [default_path]
    if repo is not None and (repo / OVERRIDE_RELATIVE).is_file():
        paths.append(repo / OVERRIDE_RELATIVE)
    try:
        key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    registry = _load(paths)
    if key is not None:
        if len(_CACHE) >= _CACHE_ENTRIES:
            _CACHE.clear()
        _CACHE[key] = registry
    return registry


_CACHE: dict[tuple[tuple[str, int, int], ...], ModelRegistry] = {}
_CACHE_ENTRIES = 32


PRICE_STAMP = ("source", "as_of")


def _restamped(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """``entry`` whose new prices drop the source and date they would inherit.

    A shipped source and date vouch for the shipped figures only: an override that sets a price
    without naming its own source must not show the vendor's page as where it came from.
    """
    cost = entry.get("cost")
    if not isinstance(cost, Mapping) or not cost or any(key in cost for key in PRICE_STAMP):
        return entry
    return {**entry, "cost": {**cost, **dict.fromkeys(PRICE_STAMP)}}


def _load(paths: list[Path]) -> ModelRegistry:
    files = [read_registry_file(path) for path in paths]
    merged: dict[str, dict[str, Any]] = {}
    for registry_file in files:
        for ident, entry in registry_file.entries.items():
            if entry is None:
                merged.pop(ident, None)
            else:
                merged[ident] = deep_merge(merged.get(ident, {}), _restamped(entry))
    specs = {ident: _validate(ident, raw, files) for ident, raw in merged.items()}
    return ModelRegistry(specs)
