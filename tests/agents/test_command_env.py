"""What a ``command`` agent gets from the worker's environment: the names its role passes, the
values it sets, its key; an unset one fails the run before it starts (real CLI runs of a small
Python agent in a real git repository)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from semspec.agents.command_env import RoleEnvironment, executable_name
from semspec.agents.llm_factory import developer_for
from semspec.core.config.models import RoleModel
from semspec.core.errors import ConfigError
from tests.agents.test_agent_steps import Recorder
from tests.agents.test_developer_agent_factory import request_for, script_command
from tests.cli.test_cli_basics import semspec, write_config

PASSED = "SEMSPEC_TEST_AGENT_BASE_URL"
OTHER = "SEMSPEC_TEST_SOMEONE_ELSES_TOKEN"
UNSET = "SEMSPEC_TEST_NEVER_SET_VARIABLE"
SHOWS_ENV = """\
import json, os, pathlib
pathlib.Path("env.json").write_text(json.dumps(dict(os.environ)))
print("done")
"""


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["claude", "-p"], "claude"),
        (["/usr/local/bin/aider", "--yes-always"], "aider"),
        (["env", "MSWEA_CONFIGURED=true", "mini", "-t", "x"], "mini"),
        (["/usr/bin/env", "-i", "-u", "HOME", "A=1", "--", "codex", "exec"], "codex"),
        (["env"], "env"),
    ],
)
def test_a_step_is_named_after_the_program_even_behind_env(argv: list[str], name: str) -> None:
    assert executable_name(argv) == name


async def test_the_agent_gets_the_names_its_role_passes_and_the_values_it_sets(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSED, "http://127.0.0.1:9/v1")
    monkeypatch.setenv(OTHER, "not-for-the-agent")
    role = RoleModel(
        provider="command",
        command=script_command(git_repo, SHOWS_ENV),
        env_pass=[PASSED],
        env_set={"MSWEA_CONFIGURED": "true"},
    )

    result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "submitted", result.summary
    seen = json.loads((git_repo / "env.json").read_text(encoding="utf-8"))
    assert seen[PASSED] == "http://127.0.0.1:9/v1"
    assert seen["MSWEA_CONFIGURED"] == "true"
    assert OTHER not in seen


@pytest.mark.parametrize("field", ["env_pass", "api_key_env"])
async def test_an_unset_variable_the_role_names_fails_before_the_agent_runs(
    git_repo: Path, field: str
) -> None:
    named = {"env_pass": [UNSET]} if field == "env_pass" else {"api_key_env": UNSET}
    role = RoleModel(provider="command", command=script_command(git_repo, SHOWS_ENV), **named)
    recorder = Recorder()

    with pytest.raises(ConfigError) as caught:
        await developer_for(role, git_repo).develop(request_for(git_repo), recorder)

    assert UNSET in caught.value.message
    assert caught.value.field == f"models.developer.{field}"
    assert not (git_repo / "env.json").exists() and recorder.steps == []


def test_an_empty_key_counts_as_missing_but_an_empty_passed_variable_is_set() -> None:
    environment = RoleEnvironment(passed=("PROXY",), api_key_env="KEY")
    assert environment.missing({"PROXY": "", "KEY": ""}) == ["KEY"]
    assert environment.missing({"KEY": "k"}) == ["PROXY"]
    assert environment.missing({"PROXY": "", "KEY": "k"}) == []


async def test_a_run_without_a_stream_is_one_step_named_after_the_program_behind_env(
    git_repo: Path,
) -> None:
    script = script_command(git_repo, SHOWS_ENV)
    role = RoleModel(provider="command", command=f"env SEMSPEC_TEST_FLAG=1 {script}")
    recorder = Recorder()

    result = await developer_for(role, git_repo).develop(request_for(git_repo), recorder)

    assert result.outcome == "submitted", result.summary
    assert [step.tool for step in recorder.steps] == [Path(sys.executable).name]


def test_config_show_lists_the_role_environment_with_the_set_values_masked(
    tmp_path: Path,
) -> None:
    developer = {
        "provider": "command",
        "command": "mini -y",
        "env_pass": ["OPENAI_API_BASE"],
        "env_set": {"MSWEA_CONFIGURED": "true", "SOME_TOKEN": "tok-secret-12345"},
    }
    write_config(tmp_path, {"models": {"developer": developer}})

    result = semspec("--repo", str(tmp_path), "config", "show", "--json")

    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)["models"]["developer"]
    assert shown["env_pass"] == ["OPENAI_API_BASE"]
    assert shown["env_set"] == {"MSWEA_CONFIGURED": "**********", "SOME_TOKEN": "**********"}
    assert "tok-secret-12345" not in result.stdout


def test_a_role_cannot_name_a_variable_a_shell_cannot_export() -> None:
    with pytest.raises(ValueError, match="not an environment variable name"):
        RoleModel(provider="command", command="mini", env_pass=["BAD=NAME"])
