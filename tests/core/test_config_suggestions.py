"""Unknown providers, models and keys are refused with a did-you-mean, by ``config validate``,
``task submit`` and the worker's agent factory alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from semspec.agents.factory import developer_agent, reviewer_agent
from semspec.agents.llm_factory import OPENAI_NAMES
from semspec.cli.app import app
from semspec.client.task_spec import build_task_input, draft_from_yaml
from semspec.core.config import check_config, config_path, load_config
from semspec.core.config.models import LoopConfig, RoleModel, SemspecConfig
from semspec.core.config.roles import PROVIDER_NAMES, registry_required
from semspec.core.errors import ConfigError, TaskSpecError
from semspec.model.registry import load_registry


def write_config(repo: Path, text: str) -> Path:
    path = config_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def registry_ids(repo: Path) -> list[str]:
    return load_registry(repo).ids


def semspec(*args: str) -> Result:
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    return CliRunner().invoke(app, list(args), env={**unset, "COLUMNS": "200"})


# ----- unknown provider --------------------------------------------------------------------


def test_an_unknown_provider_names_file_line_field_and_the_closest_provider(
    tmp_path: Path,
) -> None:
    file = write_config(tmp_path, "models:\n  developer:\n    provider: antropic\n")

    config, problems = check_config(tmp_path, environ={})

    assert config is None
    [problem] = problems
    error = problem.as_error()
    assert str(error).startswith(f"{file}:3: models.developer.provider: unknown provider ")
    assert "expected one of openai, " in str(error)
    assert error.hint is not None and error.hint.startswith("did you mean 'anthropic'?")


def test_load_config_refuses_an_unknown_provider_without_needing_the_registry(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, "models:\n  reviewer: {provider: openai-compat}\n")

    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ={})

    assert caught.value.field == "models.reviewer.provider"
    assert caught.value.hint is not None and "'openai-compatible'" in caught.value.hint


def test_an_unknown_provider_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    _, problems = check_config(tmp_path, environ={"SEMSPEC_MODELS__DEVELOPER__PROVIDER": "olama"})

    assert [(p.path, p.field) for p in problems] == [
        ("environment SEMSPEC_MODELS__DEVELOPER__PROVIDER", "models.developer.provider")
    ]
    assert (problems[0].hint or "").startswith("did you mean 'ollama'?")


def test_the_config_knows_exactly_the_providers_the_agent_factories_build() -> None:
    assert set(PROVIDER_NAMES) == {*OPENAI_NAMES, "anthropic", "command", "scripted"}


# ----- unknown model -----------------------------------------------------------------------


def test_an_unknown_model_on_a_vendor_api_names_the_closest_registry_id(tmp_path: Path) -> None:
    file = write_config(
        tmp_path, "models:\n  reviewer: {provider: anthropic, model: claude-sonnet-4.5}\n"
    )

    _, problems = check_config(tmp_path, environ={}, model_ids=registry_ids(tmp_path))

    [problem] = problems
    error = problem.as_error()
    assert str(error) == (
        f"{file}:2: models.reviewer.model: unknown model 'claude-sonnet-4.5' "
        "(expected a model id of the registry (`semspec models list`))"
    )
    assert error.hint is not None and error.hint.startswith("did you mean 'claude-sonnet-4-5'?")


def test_models_are_checked_only_when_the_registry_ids_are_given(tmp_path: Path) -> None:
    write_config(tmp_path, "models:\n  developer: {provider: openai, model: gpt-5o}\n")

    assert check_config(tmp_path, environ={})[1] == []
    assert [p.field for p in check_config(tmp_path, environ={}, model_ids=["gpt-4o"])[1]] == [
        "models.developer.model"
    ]


@pytest.mark.parametrize(
    ("role", "required"),
    [
        pytest.param({"provider": "openai", "model": "gpt-4o"}, True, id="openai-vendor"),
        pytest.param({"provider": "anthropic", "model": "x"}, True, id="anthropic-vendor"),
        pytest.param({"provider": "ollama", "model": "x"}, True, id="ollama-without-base-url"),
        pytest.param(
            {"provider": "openai", "model": "x", "base_url": "https://api.openai.com/v1"},
            True,
            id="openai-explicit-vendor-url",
        ),
        pytest.param(
            {"provider": "openai", "model": "x", "base_url": "http://127.0.0.1:11434/v1"},
            False,
            id="openai-on-loopback",
        ),
        pytest.param(
            {"provider": "vllm", "model": "x", "base_url": "http://gpu-1.internal:8000/v1"},
            False,
            id="vllm-on-a-cluster",
        ),
        pytest.param({"provider": "scripted", "model": "anything"}, False, id="scripted"),
        pytest.param({"provider": "command", "model": "anything"}, False, id="command"),
    ],
)
def test_which_roles_must_name_a_registry_model(role: dict[str, Any], required: bool) -> None:
    assert registry_required(RoleModel.model_validate(role)) is required


def test_an_ollama_tag_on_a_loopback_server_is_a_valid_model(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        "models:\n  developer: {provider: openai, model: 'qwen2.5-coder:32b',"
        " base_url: 'http://127.0.0.1:11434/v1'}\n",
    )

    assert check_config(tmp_path, environ={}, model_ids=registry_ids(tmp_path))[1] == []


def test_a_model_added_in_the_repository_registry_is_known(tmp_path: Path) -> None:
    write_config(tmp_path, "models:\n  developer: {provider: openai, model: gpt-4o-mine}\n")
    entry = load_registry(tmp_path).get("gpt-4o").model_dump(exclude={"id"})
    overrides = tmp_path / ".semspec" / "models.yaml"
    overrides.write_text(yaml.safe_dump({"models": {"gpt-4o-mine": entry}}), encoding="utf-8")

    assert check_config(tmp_path, environ={}, model_ids=registry_ids(tmp_path))[1] == []


# ----- unknown keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "field", "near"),
    [
        pytest.param("servces: {}\n", 1, "servces", "'services'", id="top"),
        pytest.param(
            "services:\n  temporal:\n    adress: x:1\n",
            3,
            "services.temporal.adress",
            "'address'",
            id="nested",
        ),
        pytest.param(
            "gates:\n  overrides:\n    test: {comand: pytest}\n",
            3,
            "gates.overrides.test.comand",
            "'command'",
            id="dict-item",
        ),
        pytest.param(
            "gates:\n  additional:\n    - {name: a, command: b, requird: false}\n",
            3,
            "gates.additional.0.requird",
            "'required'",
            id="list-item",
        ),
        pytest.param(
            "models:\n  reviewer:\n    api_key_var: K\n",
            3,
            "models.reviewer.api_key_var",
            "'api_key_env'",
            id="role",
        ),
    ],
)
def test_an_unknown_key_suggests_the_closest_key_of_its_section(
    tmp_path: Path, text: str, line: int, field: str, near: str
) -> None:
    file = write_config(tmp_path, text)

    _, problems = check_config(tmp_path, environ={})

    [problem] = problems
    assert (problem.path, problem.line, problem.field, problem.message) == (
        str(file),
        line,
        field,
        "unknown key",
    )
    assert problem.as_error().hint == f"did you mean {near}?"


def test_an_unknown_key_from_the_environment_suggests_the_variable(tmp_path: Path) -> None:
    _, problems = check_config(tmp_path, environ={"SEMSPEC_LOOP__MAX_RETRYS": "4"})

    assert problems[0].as_error().hint == "did you mean SEMSPEC_LOOP__MAX_RETRIES?"


def test_an_unknown_key_like_no_other_lists_the_keys_of_its_section(tmp_path: Path) -> None:
    write_config(tmp_path, "loop:\n  zzz: 1\n")

    _, problems = check_config(tmp_path, environ={})

    keys = ", ".join(LoopConfig.model_fields)
    assert keys.startswith("max_retries, max_iterations, developer_timeout_s, ")
    assert problems[0].as_error().hint == f"keys of loop: {keys}"


# ----- the CLI -----------------------------------------------------------------------------


def test_config_validate_prints_each_problem_with_its_hint_and_exits_2(tmp_path: Path) -> None:
    file = write_config(
        tmp_path,
        "models:\n  developer: {provider: antropic}\n"
        "  reviewer: {provider: anthropic, model: claude-opus-4.1}\nloop: {max_retrys: 1}\n",
    )

    result = semspec("--repo", str(tmp_path), "config", "validate")

    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["error", "hint"] * 3
    assert lines[0].startswith(f"error: {file}:2: models.developer.provider: unknown provider")
    assert lines[1].startswith("hint: did you mean 'anthropic'?")
    assert lines[2].startswith(f"error: {file}:3: models.reviewer.model: unknown model")
    assert lines[3].startswith("hint: did you mean 'claude-opus-4-1'?")
    assert lines[5] == "hint: did you mean 'max_retries'?"


def test_config_validate_json_carries_the_hint(tmp_path: Path) -> None:
    write_config(tmp_path, "models:\n  developer: {provider: openai, model: gpt4o}\n")

    result = semspec("--repo", str(tmp_path), "config", "validate", "--json")

    assert result.exit_code == 2
    [problem] = json.loads(result.stdout)["problems"]
    assert problem["field"] == "models.developer.model"
    assert problem["hint"].startswith("did you mean 'gpt-4o'?")


def test_config_validate_lists_a_broken_repository_registry(tmp_path: Path) -> None:
    write_config(tmp_path, "loop: {max_retries: 2}\n")
    registry = tmp_path / ".semspec" / "models.yaml"
    registry.write_text("models:\n  gpt-4o:\n    contxt: {}\n", encoding="utf-8")

    result = semspec("--repo", str(tmp_path), "config", "validate")

    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {registry}:3: models.gpt-4o.contxt: unknown key"
    )


# ----- task submit and the worker ----------------------------------------------------------


def task_file(folder: Path, extra: str = "") -> Path:
    path = folder / "task.yaml"
    path.write_text(f"title: Add subtraction\nfiles: [calc.py]\n{extra}", encoding="utf-8")
    return path


def test_a_task_naming_an_unknown_model_fails_at_submit_with_a_did_you_mean(
    git_repo: Path, tmp_path: Path
) -> None:
    draft = draft_from_yaml(
        task_file(tmp_path, "reviewer: {provider: anthropic, model: claude-haiku-4.5}\n")
    )

    with pytest.raises(TaskSpecError) as caught:
        build_task_input(draft, SemspecConfig(), git_repo)

    assert caught.value.field == "reviewer.model"
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("did you mean 'claude-haiku-4-5'?")


def test_a_config_model_that_is_unknown_fails_at_submit_naming_the_config(git_repo: Path) -> None:
    config = SemspecConfig.model_validate(
        {"models": {"developer": {"provider": "openai", "model": "gpt-4.1-mimi"}}}
    )
    draft = draft_from_yaml(task_file(git_repo))

    with pytest.raises(ConfigError) as caught:
        build_task_input(draft, config, git_repo)

    assert caught.value.field == "models.developer.model"
    assert caught.value.path == str(config_path(git_repo))
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("did you mean 'gpt-4.1-mini'?")


def test_task_submit_on_the_command_line_refuses_the_unknown_model_before_any_service(
    git_repo: Path, tmp_path: Path
) -> None:
    path = task_file(tmp_path, "developer: {provider: openai, model: gpt-4o-mimi}\n")

    # No stack runs here: the error must come from submit's own checks.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "semspec",
            "--repo",
            str(git_repo),
            "task",
            "submit",
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=60,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: developer.model: unknown model 'gpt-4o-mimi' "
        "(expected a model id of the registry (`semspec models list`))",
        "hint: did you mean 'gpt-4o-mini'? add the model to .semspec/models.yaml, or set "
        "base_url when a server of your own serves it",
    ]


def test_an_unknown_key_of_a_task_role_suggests_the_known_one(tmp_path: Path) -> None:
    path = task_file(tmp_path, "developer: {provider: scripted, modle: scripted}\n")

    with pytest.raises(TaskSpecError) as caught:
        draft_from_yaml(path)

    assert caught.value.field == "developer.modle"
    assert (caught.value.hint or "").startswith("did you mean developer.model?")


def test_a_task_role_script_is_relative_to_the_task_file(tmp_path: Path) -> None:
    path = task_file(tmp_path, "developer: {provider: scripted, script: s.yaml}\n")

    assert draft_from_yaml(path).developer["script"] == str((tmp_path / "s.yaml").resolve())


@pytest.mark.parametrize("build", [developer_agent, reviewer_agent])
def test_the_worker_refuses_an_unknown_model_with_the_same_did_you_mean(
    git_repo: Path, build: Any
) -> None:
    role = RoleModel(provider="anthropic", model="claude-sonet-4-5")

    with pytest.raises(ConfigError) as caught:
        build(role, git_repo)

    assert caught.value.field in {"models.developer.model", "models.reviewer.model"}
    assert (caught.value.hint or "").startswith("did you mean 'claude-sonnet-4-5'?")


def test_the_worker_refuses_an_unknown_provider_with_a_did_you_mean(git_repo: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        developer_agent(RoleModel(provider="scriptd"), git_repo)

    assert (caught.value.hint or "").startswith("did you mean 'scripted'?")
