"""Loading ``.semspec/config.yaml``: errors name file, line and field; env overrides apply."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, SecretStr

from semspec.core.config import check_config, config_path, load_config
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ConfigError, InputError

_WRONG_SCALARS: dict[Any, Any] = {
    int: "many",
    float: "lots",
    bool: "perhaps",
    str: [1, 2],
    SecretStr: [1],
}


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _wrong_value(annotation: Any) -> Any:
    """A YAML value of the wrong type for a field declared as ``annotation``."""
    annotation = _unwrap_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "bogus"
    if origin is dict:
        return [1]
    if origin is list:
        return {"a": 1}
    if _is_model(annotation):
        return 5
    return _WRONG_SCALARS[annotation]


def _fields(model: type[BaseModel], prefix: tuple[str | int, ...] = ()) -> Iterator[Any]:
    """Every field of the config schema (sections, leaves, and fields of list/dict items)."""
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        annotation = _unwrap_optional(info.annotation)
        yield path, info.annotation
        if _is_model(annotation):
            yield from _fields(annotation, path)
        elif typing.get_origin(annotation) is dict:
            item = typing.get_args(annotation)[1]
            if _is_model(item):
                yield from _fields(item, (*path, "test"))
        elif typing.get_origin(annotation) is list:
            item = typing.get_args(annotation)[0]
            if _is_model(item):
                yield from _fields(item, (*path, 0))


def _nest(path: tuple[str | int, ...], value: Any) -> Any:
    """YAML data placing ``value`` at ``path`` (ints become one-item lists)."""
    for key in reversed(path):
        value = [value] if isinstance(key, int) else {key: value}
    return value


FIELDS: list[tuple[tuple[str | int, ...], Any]] = list(_fields(SemspecConfig))
FIELD_CASES = [pytest.param(path, ann, id=".".join(map(str, path))) for path, ann in FIELDS]


def write_config(repo: Path, data: Any) -> Path:
    path = config_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_text(repo: Path, text: str) -> Path:
    path = config_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_walk_covers_the_sections_and_nested_items() -> None:
    dotted = {".".join(map(str, path)) for path, _ in FIELDS}
    assert {"loop.max_retries", "services.nats.token", "gates.additional.0.timeout"} <= dotted
    assert "gates.overrides.test.enabled" in dotted
    assert len(dotted) > 80


@pytest.mark.parametrize(("path", "annotation"), FIELD_CASES)
def test_a_wrong_type_in_any_field_is_reported_with_file_line_field_and_expected_form(
    tmp_path: Path, path: tuple[str | int, ...], annotation: Any
) -> None:
    file = write_config(tmp_path, _nest(path, _wrong_value(annotation)))
    config, problems = check_config(tmp_path, environ={})
    assert config is None
    dotted = ".".join(map(str, path))
    problem = next((p for p in problems if p.field == dotted), None)
    assert problem is not None, f"no problem reported at {dotted}: {problems}"
    assert problem.path == str(file)
    assert problem.line is not None and problem.line >= 1
    assert problem.expected, f"no expected form for {dotted}: {problem}"
    text = str(problem.as_error())
    assert text.startswith(f"{file}:{problem.line}: {dotted}: ")
    assert "(expected " in text


def test_load_config_raises_a_config_error_naming_file_line_and_field(tmp_path: Path) -> None:
    file = write_text(tmp_path, "project:\n  name: demo\nloop:\n  max_retries: lots\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    err = caught.value
    assert isinstance(err, InputError) and err.exit_code == 2
    assert (err.path, err.line, err.field, err.expected) == (
        str(file),
        4,
        "loop.max_retries",
        "an integer",
    )
    assert str(err) == f"{file}:4: loop.max_retries: {err.message.split(': ')[-1]}"
    assert err.hint is not None and "semspec config validate" in err.hint


def test_load_config_hint_counts_the_other_problems(tmp_path: Path) -> None:
    write_text(tmp_path, "loop:\n  max_retries: x\n  max_iterations: y\ngates:\n  preset: z\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.hint == "2 more problem(s); run `semspec config validate` to list all"


def test_a_value_out_of_range_names_the_bound(tmp_path: Path) -> None:
    write_config(tmp_path, {"loop": {"max_iterations": 0}, "services": {"nats": {"port": 70000}}})
    _, problems = check_config(tmp_path, environ={})
    expected = {p.field: p.expected for p in problems}
    assert expected == {
        "loop.max_iterations": "a value >= 1",
        "services.nats.port": "a value <= 65535",
    }


def test_an_unknown_key_at_the_top_is_reported_with_its_line(tmp_path: Path) -> None:
    file = write_text(tmp_path, "project:\n  name: demo\nservces:\n  nats: {}\n")
    _, problems = check_config(tmp_path, environ={})
    assert [(p.path, p.line, p.field, p.message) for p in problems] == [
        (str(file), 3, "servces", "unknown key")
    ]
    assert "documented keys" in (problems[0].expected or "")


def test_an_unknown_nested_key_is_reported_with_its_dotted_path(tmp_path: Path) -> None:
    write_text(tmp_path, "services:\n  temporal:\n    namespace: ns\n    adress: x:1\n")
    _, problems = check_config(tmp_path, environ={})
    assert [(p.line, p.field, p.message) for p in problems] == [
        (4, "services.temporal.adress", "unknown key")
    ]


def test_every_problem_is_listed_not_only_the_first(tmp_path: Path) -> None:
    write_text(tmp_path, "loop:\n  max_retries: x\nextra: 1\nrisk:\n  retry_count: {level: loud}\n")
    _, problems = check_config(tmp_path, environ={})
    assert {p.field for p in problems} == {"loop.max_retries", "extra", "risk.retry_count.level"}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("project:\n  name: [unclosed\n", 3, id="unclosed-bracket"),
        pytest.param("project:\n  name: a\n bad: indent\n", 3, id="bad-indent"),
        pytest.param("loop:\n\tmax_retries: 3\n", 2, id="tab"),
    ],
)
def test_a_file_that_is_not_yaml_is_reported_with_the_line(
    tmp_path: Path, text: str, line: int
) -> None:
    file = write_text(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.path == str(file)
    assert caught.value.line == line
    assert "not valid YAML" in str(caught.value)
    assert str(caught.value).startswith(f"{file}:{line}: ")


def test_a_top_level_list_is_rejected_as_not_a_mapping(tmp_path: Path) -> None:
    file = write_text(tmp_path, "- project\n- loop\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert str(caught.value) == f"{file}:1: top level is not a mapping (expected a mapping)"


def test_a_missing_or_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path, environ={}) == SemspecConfig()
    write_text(tmp_path, "# nothing here yet\n")
    assert load_config(tmp_path, environ={}) == SemspecConfig()


def test_an_environment_variable_overrides_a_field(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={"SEMSPEC_LOOP__MAX_RETRIES": "7"})
    assert config.loop.max_retries == 7


def test_an_environment_variable_wins_over_the_file_and_keeps_its_siblings(tmp_path: Path) -> None:
    write_config(tmp_path, {"loop": {"max_retries": 2, "max_iterations": 9}})
    config = load_config(tmp_path, environ={"SEMSPEC_LOOP__MAX_RETRIES": "5"})
    assert (config.loop.max_retries, config.loop.max_iterations) == (5, 9)


def test_environment_overrides_reach_three_levels_and_parse_yaml_values(tmp_path: Path) -> None:
    environ = {
        "SEMSPEC_SERVICES__TEMPORAL__PORT": "0",
        "SEMSPEC_RISK__SCOPE_CREEP__ENABLED": "false",
        "SEMSPEC_INDEX__EXCLUDE_DIRS": "[a, b]",
        "SEMSPEC_PROJECT__NAME": "demo",
    }
    config = load_config(tmp_path, environ=environ)
    assert config.services.temporal.port == 0
    assert config.risk.scope_creep.enabled is False
    assert config.index.exclude_dirs == ["a", "b"]
    assert config.project.name == "demo"


def test_cli_variables_are_not_taken_for_config_fields(tmp_path: Path) -> None:
    environ = {"SEMSPEC_REPO": "/x", "SEMSPEC_LOG_FORMAT": "json", "SEMSPEC_LOG_LEVEL": "DEBUG"}
    assert load_config(tmp_path, environ=environ) == SemspecConfig()


def test_a_bad_environment_value_names_the_variable_not_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, {"loop": {"max_iterations": 4}})
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={"SEMSPEC_LOOP__MAX_RETRIES": "lots"})
    err = caught.value
    assert err.path == "environment SEMSPEC_LOOP__MAX_RETRIES"
    assert err.line is None
    assert str(err).startswith("environment SEMSPEC_LOOP__MAX_RETRIES: loop.max_retries: ")


def test_an_environment_variable_naming_no_field_is_an_unknown_key(tmp_path: Path) -> None:
    _, problems = check_config(tmp_path, environ={"SEMSPEC_LOOP__MAX_RETRYS": "4"})
    assert [(p.path, p.field, p.message) for p in problems] == [
        ("environment SEMSPEC_LOOP__MAX_RETRYS", "loop.max_retrys", "unknown key")
    ]


def test_secret_fields_keep_the_value_but_never_show_it(tmp_path: Path) -> None:
    write_config(tmp_path, {"services": {"temporal": {"api_key": "tk-live-123456"}}})
    config = load_config(tmp_path, environ={"SEMSPEC_SERVICES__NATS__TOKEN": "nats-s3cret"})
    assert config.services.nats.token is not None
    assert config.services.nats.token.get_secret_value() == "nats-s3cret"
    dumped = str(config.model_dump(mode="json")) + repr(config)
    assert "nats-s3cret" not in dumped and "tk-live-123456" not in dumped


def test_sparql_mode_without_endpoints_is_reported_on_the_graph_section(tmp_path: Path) -> None:
    file = write_text(tmp_path, "graph:\n  mode: sparql\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})
    assert caught.value.field == "graph"
    assert str(caught.value) == (
        f"{file}:1: graph: sparql mode needs both query_url and update_url"
    )


def test_a_risk_rule_given_in_part_keeps_the_rest_of_its_own_default(tmp_path: Path) -> None:
    # As docs/risk-monitor.md shows: turn a step rule off, or change only a threshold.
    write_config(
        tmp_path,
        {
            "risk": {
                "retry_count": {"threshold": 5},
                "steps": {"repeated_action": {"enabled": False}, "no_tool_call": {"threshold": 5}},
            }
        },
    )

    risk = load_config(tmp_path).risk

    assert (risk.retry_count.threshold, risk.retry_count.level) == (5, "escalate")
    off = risk.steps.repeated_action
    assert (off.enabled, off.threshold, off.level) == (False, 4, "pause")
    assert (risk.steps.no_tool_call.threshold, risk.steps.no_tool_call.level) == (5, "pause")


def test_a_bad_value_in_a_rule_given_in_part_is_still_named_at_its_line(tmp_path: Path) -> None:
    write_config(tmp_path, {"risk": {"steps": {"repeated_action": {"threshold": 99}}}})

    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)

    assert caught.value.field == "risk.steps.repeated_action"
    assert caught.value.line == 3  # the rule's own line
