"""Agents built from role config: OpenAI-compatible, Anthropic and external-CLI developers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from semspec.agents.command_developer import CommandDeveloper
from semspec.agents.llm_factory import developer_for, resolve, reviewer_for
from semspec.agents.protocol import DeveloperRequest
from semspec.core.config.models import RoleModel
from semspec.core.errors import ConfigError
from semspec.model.providers.credentials import is_loopback_url
from semspec.model.registry import load_registry
from tests.fakes.llm_server import FakeLLMServer, call

AGENT_SCRIPT = """\
import sys, pathlib
prompt = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
pathlib.Path("agent_was_here.txt").write_text(prompt)
print("edited agent_was_here.txt")
"""
REGISTRY_KEY_VARIABLE = "OPENAI_API_KEY"
UNSET_KEY_VARIABLE = "SEMSPEC_TEST_NEVER_SET_KEY"
LEAVES_A_WATCHER = """\
import subprocess, sys
# A child that outlives the agent and keeps the agent's stdout and stderr open.
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("edited the files; a watcher keeps running")
"""


def request_for(worktree: Path) -> DeveloperRequest:
    return DeveloperRequest(
        task_id="t9",
        title="Touch a file",
        description="Create agent_was_here.txt.",
        criteria=["the file exists"],
        task_files=["agent_was_here.txt"],
        worktree=str(worktree),
        iteration=1,
    )


def script_command(worktree: Path, body: str, suffix: str = "") -> str:
    """The command running ``body`` as the agent; the script sits in the worktree, the one
    folder besides the system a sandboxed command agent can see."""
    script = worktree / "fake_agent.py"
    script.write_text(body)
    return f"{sys.executable} {script}{suffix}"


async def test_openai_compatible_role_builds_a_working_developer(git_repo: Path) -> None:
    with FakeLLMServer([call("submit", {"summary": "nothing to do"})]) as server:
        role = RoleModel(provider="openai-compatible", model="qwen-local", base_url=server.base_url)
        result = await developer_for(role, git_repo).develop(request_for(git_repo))
        body = server.requests[0].body

    assert result.outcome == "submitted"
    assert body["model"] == "qwen-local"
    assert body["max_tokens"] == 4096


def test_registry_entry_fills_what_the_role_leaves_unset(git_repo: Path) -> None:
    spec = load_registry(git_repo).get("gpt-4o")

    settings = resolve(RoleModel(provider="openai", model="gpt-4o"), git_repo)

    assert settings.window == spec.context.effective_context
    assert settings.api_key_env == "OPENAI_API_KEY"
    assert settings.model == spec.wire_name


def test_anthropic_reviewer_without_its_key_variable_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, git_repo: Path
) -> None:
    monkeypatch.delenv("SEMSPEC_TEST_ANTHROPIC_KEY", raising=False)
    role = RoleModel(
        provider="anthropic", model="claude-x", api_key_env="SEMSPEC_TEST_ANTHROPIC_KEY"
    )

    with pytest.raises(ConfigError) as caught:
        reviewer_for(role, git_repo)

    assert "models.reviewer.api_key_env" in caught.value.message
    assert "SEMSPEC_TEST_ANTHROPIC_KEY" in caught.value.message


def test_unknown_provider_names_the_field_and_the_choices(git_repo: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        developer_for(RoleModel(provider="gemini", model="x"), git_repo)

    assert "models.developer.provider" in caught.value.message
    assert "anthropic" in caught.value.message


def test_command_provider_cannot_review(git_repo: Path) -> None:
    with pytest.raises(ConfigError):
        reviewer_for(RoleModel(provider="command", command="claude -p"), git_repo)


async def test_command_developer_runs_the_cli_in_the_worktree_with_the_prompt_on_stdin(
    git_repo: Path,
) -> None:
    role = RoleModel(provider="command", command=script_command(git_repo, AGENT_SCRIPT))

    result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "submitted"
    assert result.summary == "edited agent_was_here.txt"
    assert "Create agent_was_here.txt." in (git_repo / "agent_was_here.txt").read_text()


async def test_command_developer_puts_the_prompt_where_the_placeholder_is(git_repo: Path) -> None:
    role = RoleModel(
        provider="command", command=script_command(git_repo, AGENT_SCRIPT, " {prompt}")
    )

    result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "submitted"
    assert (git_repo / "agent_was_here.txt").read_text().startswith("# Task t9: Touch a file")


async def test_command_developer_that_hangs_is_killed_with_reason_timeout(git_repo: Path) -> None:
    hang = "import time\ntime.sleep(60)\n"
    role = RoleModel(provider="command", command=script_command(git_repo, hang), timeout_s=0.5)

    result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "failed"
    assert result.reason == "timeout"


async def test_command_developer_that_fails_reports_its_stderr(git_repo: Path) -> None:
    failing = "import sys\nsys.stderr.write('no credits left')\nsys.exit(3)\n"
    role = RoleModel(provider="command", command=script_command(git_repo, failing))

    result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "failed"
    assert result.reason == "transport_error"
    assert "exited with 3: no credits left" in result.summary


async def test_command_that_does_not_exist_is_a_config_error(git_repo: Path) -> None:
    role = RoleModel(provider="command", command="surely-not-an-agent-cli -p")

    with pytest.raises(ConfigError) as caught:
        await developer_for(role, git_repo).develop(request_for(git_repo))

    assert "surely-not-an-agent-cli" in caught.value.message


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1"],
)
def test_loopback_addresses_count_as_this_machine(url: str) -> None:
    assert is_loopback_url(url)


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://10.0.0.5:8000/v1", None])
def test_other_addresses_do_not_count_as_this_machine(url: str | None) -> None:
    assert not is_loopback_url(url)


async def test_a_local_openai_compatible_server_needs_no_api_key(git_repo: Path) -> None:
    assert not os.environ.get(REGISTRY_KEY_VARIABLE), "the test needs the vendor key unset"
    with FakeLLMServer([call("submit", {"summary": "nothing to do"})]) as server:
        # The registry entry of gpt-4o-mini names the vendor's key variable; the role names none.
        role = RoleModel(provider="openai", model="gpt-4o-mini", base_url=server.base_url)
        assert is_loopback_url(server.base_url)
        result = await developer_for(role, git_repo).develop(request_for(git_repo))

    assert result.outcome == "submitted"


def test_a_key_variable_the_role_names_must_be_set_even_on_loopback(git_repo: Path) -> None:
    role = RoleModel(
        provider="openai",
        model="gpt-4o-mini",
        base_url="http://127.0.0.1:9/v1",
        api_key_env=UNSET_KEY_VARIABLE,
    )

    with pytest.raises(ConfigError) as caught:
        developer_for(role, git_repo)

    assert UNSET_KEY_VARIABLE in caught.value.message


def test_a_remote_openai_compatible_server_still_needs_its_api_key(git_repo: Path) -> None:
    role = RoleModel(
        provider="openai",
        model="gpt-4o-mini",
        base_url="https://llm.example.invalid/v1",
        api_key_env=UNSET_KEY_VARIABLE,
    )

    with pytest.raises(ConfigError) as caught:
        developer_for(role, git_repo)

    assert UNSET_KEY_VARIABLE in caught.value.message


async def test_a_command_agent_that_exits_0_leaving_a_background_child_succeeds(
    git_repo: Path,
) -> None:
    agent = CommandDeveloper(script_command(git_repo, LEAVES_A_WATCHER), timeout_s=30)

    result = await agent.develop(request_for(git_repo))

    assert result.outcome == "submitted"
    assert result.summary == "edited the files; a watcher keeps running"
