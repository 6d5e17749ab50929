"""Load ``.semspec/config.yaml``, apply ``SEMSPEC_*`` overrides, and report errors precisely.

Errors name the file, the line where the YAML node sits (when there is one), the dotted field
path, and the expected form, so ``semspec config validate`` can list every problem at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from semspec.config.models import SemspecConfig
from semspec.errors import ConfigError

CONFIG_RELATIVE = Path(".semspec") / "config.yaml"
ENV_PREFIX = "SEMSPEC_"
# Variables that configure the CLI itself rather than a config field.
_NON_FIELD_ENV = {"SEMSPEC_REPO", "SEMSPEC_LOG_FORMAT", "SEMSPEC_LOG_LEVEL"}


@dataclass(frozen=True)
class ConfigProblem:
    """One validation problem: where it is and what was expected."""

    path: str
    field: str
    message: str
    line: int | None = None
    expected: str | None = None

    def as_error(self) -> ConfigError:
        return ConfigError(
            self.message,
            path=self.path,
            field=self.field or None,
            line=self.line,
            expected=self.expected,
            hint="fix the field, then run `semspec config validate`",
        )


def config_path(repo: Path) -> Path:
    """Path of the config file of the repository at ``repo``."""
    return repo / CONFIG_RELATIVE


def _line_of(node: yaml.Node | None, loc: tuple[str | int, ...]) -> int | None:
    """1-based line of the key (or list item) at ``loc``, or of its nearest existing parent.

    A key's own line, not its value's: for a block value such as an unknown section the value
    starts a line below the name the user has to fix.
    """
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if k.value == key), None)
            if pair is None:
                return line
            line = pair[0].start_mark.line + 1
            node = pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Nested dict from ``SEMSPEC_SECTION__FIELD=value`` variables (values parsed as YAML)."""
    nested: dict[str, Any] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in _NON_FIELD_ENV:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not parts:
            continue
        try:
            value = yaml.safe_load(raw) if raw else raw
        except yaml.YAMLError:
            value = raw
        cursor = nested
        for part in parts[:-1]:
            cursor = cursor.setdefault(part, {})
            if not isinstance(cursor, dict):
                break
        else:
            cursor[parts[-1]] = value
    return nested


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _expected_form(error_type: str, ctx: Mapping[str, Any] | None) -> str | None:
    forms = {
        "int_parsing": "an integer",
        "int_type": "an integer",
        "float_parsing": "a number",
        "float_type": "a number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "a string",
        "dict_type": "a mapping",
        "model_type": "a mapping",
        "list_type": "a list",
        "extra_forbidden": "one of the documented keys (see `semspec config show`)",
        "missing": "this field to be present",
    }
    if error_type == "literal_error" and ctx:
        return f"one of {ctx.get('expected')}"
    if error_type in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"} and ctx:
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(
            error_type, "<="
        )
        bound = next(iter(ctx.values()))
        return f"a value {op} {bound}"
    return forms.get(error_type)


def _problems(
    err: ValidationError, path: str, root: yaml.Node | None, from_env: dict[str, Any]
) -> list[ConfigProblem]:
    problems = []
    for item in err.errors():
        loc = tuple(item["loc"])
        field = ".".join(str(p) for p in loc)
        source = path
        probe: Any = from_env
        for key in loc:
            probe = probe.get(key) if isinstance(probe, dict) else None
        if probe is not None:
            source = f"environment SEMSPEC_{'__'.join(str(p).upper() for p in loc)}"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif item["type"] == "value_error":
            # Our own validators' words, without pydantic's "Value error, " prefix.
            message = message.removeprefix("Value error, ")
        problems.append(
            ConfigProblem(
                path=source,
                field=field,
                message=message,
                line=_line_of(root, loc) if source == path else None,
                expected=_expected_form(item["type"], item.get("ctx")),
            )
        )
    # In the order of the file (as a user fixes them), environment problems last.
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return problems


def check_config(
    repo: Path, environ: Mapping[str, str] | None = None
) -> tuple[SemspecConfig | None, list[ConfigProblem]]:
    """Load the repository's config; return it (or None) and every problem found."""
    environ = os.environ if environ is None else environ
    path = config_path(repo)
    shown = str(path)
    raw: Any = {}
    root: yaml.Node | None = None
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc)
            return None, [ConfigProblem(shown, "", f"not valid YAML: {problem}", line)]
        if not isinstance(raw, dict):
            return None, [ConfigProblem(shown, "", "top level is not a mapping", 1, "a mapping")]
    from_env = _env_overrides(environ)
    data = _merge(raw, from_env)
    try:
        return SemspecConfig.model_validate(data), []
    except ValidationError as err:
        return None, _problems(err, shown, root, from_env)


def load_config(repo: Path, environ: Mapping[str, str] | None = None) -> SemspecConfig:
    """Load and validate the config, raising a ``ConfigError`` naming the first problem."""
    config, problems = check_config(repo, environ)
    if config is None:
        first = problems[0].as_error()
        if len(problems) > 1:
            first.hint = (
                f"{len(problems) - 1} more problem(s); run `semspec config validate` to list all"
            )
        raise first
    return config
