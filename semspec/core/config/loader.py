"""Load ``.semspec/config.yaml``, apply ``SEMSPEC_*`` overrides, and report errors precisely.

Errors name the file, the line where the YAML node sits (when there is one), the dotted field
path, and the expected form, so ``semspec config validate`` can list every problem at once.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from semspec.core.config.models import ModelsConfig, RoleModel, SemspecConfig
from semspec.core.config.roles import did_you_mean, role_issues
from semspec.core.errors import ConfigError
from semspec.core.yaml_files import YamlDocument, deep_merge, parse_yaml, read_yaml

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
    hint: str | None = None
    """What to do, e.g. a did-you-mean; unset = the generic advice."""

    def as_error(self) -> ConfigError:
        return ConfigError(
            self.message,
            path=self.path,
            field=self.field or None,
            line=self.line,
            expected=self.expected,
            hint=self.hint or "fix the field, then run `semspec config validate`",
        )


def config_path(repo: Path) -> Path:
    """Path of the config file of the repository at ``repo``."""
    return repo / CONFIG_RELATIVE


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
            value = parse_yaml(raw, name).data if raw else raw
        except ConfigError:
            value = raw
        cursor = nested
        for part in parts[:-1]:
            cursor = cursor.setdefault(part, {})
            if not isinstance(cursor, dict):
                break
        else:
            cursor[parts[-1]] = value
    return nested


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
        "string_or_list_type": "a string or a list of strings",
        "extra_forbidden": "one of the documented keys (`semspec config reference`)",
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


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def _section_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The config model whose keys sit at ``loc`` (dict keys and list indexes stepped over)."""
    model: type[BaseModel] = SemspecConfig
    pending = list(loc)
    while pending:
        info = model.model_fields.get(str(pending.pop(0)))
        if info is None:
            return None
        annotation = _unwrap_optional(info.annotation)
        if typing.get_origin(annotation) in (dict, list):
            if not pending:
                return None
            pending.pop(0)  # the gate name of a dict, the index of a list
            annotation = typing.get_args(annotation)[-1]
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _env_name(loc: tuple[str | int, ...]) -> str:
    return ENV_PREFIX + "__".join(str(p).upper() for p in loc)


def _unknown_key_hint(loc: tuple[str | int, ...], from_env: bool) -> str | None:
    """A did-you-mean naming the closest key of the same section (or its variable)."""
    section = _section_at(loc[:-1])
    if section is None:
        return None
    near = did_you_mean(str(loc[-1]), section.model_fields)
    if near is None:
        where = ".".join(str(p) for p in loc[:-1]) or "the top level"
        return f"keys of {where}: {', '.join(section.model_fields)}"
    shown = _env_name((*loc[:-1], near)) if from_env else repr(near)
    return f"did you mean {shown}?"


def _origin(
    loc: tuple[str | int, ...], document: YamlDocument, from_env: dict[str, Any]
) -> tuple[str, int | None]:
    """Where the value at ``loc`` came from: an environment variable, or the file and line."""
    probe: Any = from_env
    for key in loc:
        probe = probe.get(key) if isinstance(probe, dict) else None
    if probe is not None:
        return f"environment {_env_name(loc)}", None
    return document.path, document.line_of(loc)


def _union_field(loc: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """The field's own location when ``loc`` ends in the member tag pydantic appends for each
    alternative of a union field (``index.workers.int``), else None."""
    if len(loc) < 2 or not isinstance(loc[-1], str):  # an int is a list index, not a tag
        return None
    section = _section_at(loc[:-2])
    info = section.model_fields.get(str(loc[-2])) if section is not None else None
    if info is None:
        return None
    annotation = info.annotation
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return None
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    return loc[:-1] if len(members) > 1 else None


def _problems(
    err: ValidationError, document: YamlDocument, from_env: dict[str, Any]
) -> list[ConfigProblem]:
    problems = []
    # One problem per union field, naming every form it takes, rather than one per alternative.
    unions: dict[tuple[str | int, ...], ConfigProblem] = {}
    for item in err.errors():
        loc = tuple(item["loc"])
        union_loc = _union_field(loc)
        loc = union_loc or loc
        source, line = _origin(loc, document, from_env)
        message = item["msg"]
        hint = None
        expected = _expected_form(item["type"], item.get("ctx"))
        if item["type"] == "extra_forbidden":
            message = "unknown key"
            hint = _unknown_key_hint(loc, from_env=source != document.path)
        elif item["type"] == "value_error":
            # Our own validators' words, without pydantic's "Value error, " prefix.
            message = message.removeprefix("Value error, ")
            hint = (item.get("ctx") or {}).get("hint")
        if union_loc is not None and union_loc in unions:
            known = unions[union_loc]
            forms = " or ".join(f for f in (known.expected, expected) if f)
            unions[union_loc] = replace(known, message="wrong type", expected=forms or None)
            continue
        problem = ConfigProblem(
            path=source,
            field=".".join(str(p) for p in loc),
            message=message,
            line=line,
            expected=expected,
            hint=hint,
        )
        if union_loc is not None:
            unions[union_loc] = problem
        else:
            problems.append(problem)
    return problems + list(unions.values())


def _role_problems(
    data: Mapping[str, Any],
    model_ids: Collection[str] | None,
    document: YamlDocument,
    from_env: dict[str, Any],
) -> list[ConfigProblem]:
    """Unknown providers (and, given the registry's ids, unknown models) of the roles."""
    models = data.get("models")
    problems = []
    for name in ModelsConfig.model_fields:
        raw = models.get(name) if isinstance(models, dict) else None
        try:
            role = RoleModel.model_validate(raw or {})
        except ValidationError:
            continue  # the whole-config validation reports it
        for issue in role_issues(role, model_ids):
            loc = ("models", name, issue.key)
            source, line = _origin(loc, document, from_env)
            field = ".".join(loc)
            problems.append(
                ConfigProblem(source, field, issue.message, line, issue.expected, issue.hint)
            )
    return problems


def check_config(
    repo: Path,
    environ: Mapping[str, str] | None = None,
    *,
    model_ids: Collection[str] | None = None,
) -> tuple[SemspecConfig | None, list[ConfigProblem]]:
    """Load the repository's config; return it (or None) and every problem found.

    Roles naming an unknown provider are always problems; given ``model_ids`` (the registry's
    ids) so are roles naming an unknown model where the registry is required
    (``semspec.core.config.roles``).
    """
    environ = os.environ if environ is None else environ
    path = config_path(repo)
    shown = str(path)
    document = YamlDocument(shown, {}, None)
    if path.exists():
        try:
            document = read_yaml(path)
        except ConfigError as exc:
            return None, [ConfigProblem(shown, "", exc.problem, exc.line, hint=exc.hint)]
        if not document.data:  # an empty file (or an empty value) is the defaults
            document = YamlDocument(shown, {}, document.root)
        if not isinstance(document.data, dict):
            return None, [ConfigProblem(shown, "", "top level is not a mapping", 1, "a mapping")]
    from_env = _env_overrides(environ)
    data = deep_merge(document.data, from_env)
    problems = _role_problems(data, model_ids, document, from_env)
    config: SemspecConfig | None = None
    try:
        config = SemspecConfig.model_validate(data)
    except ValidationError as err:
        problems += _problems(err, document, from_env)
    if problems:
        # In the order of the file (as a user fixes them), environment problems last.
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        return None, problems
    return config, []


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
