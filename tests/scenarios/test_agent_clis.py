"""The real agent CLIs, installed at their pinned versions, run as docs/providers.md configures
them: fenced by bubblewrap, on a repository under ``/tmp``, against the fake OpenAI-compatible
server on loopback (issue 24).

Each CLI is installed once into a cache folder (``SEMSPEC_AGENT_CLI_CACHE``, default
``~/.cache/semspec-tests/agent-clis``) in a virtual environment of its own. Where the registry
cannot be reached the tests skip with the reason, except on CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.agents.llm_factory import developer_for
from semspec.agents.protocol import DeveloperRequest
from semspec.core.config.models import RoleModel
from semspec.core.sandbox import sandbox_for
from tests.fakes.agent_model_server import AgentModelServer, calls
from tests.fakes.llm_server import FakeLLMServer, FakeReply, call, text
from tests.test_agent_steps import Recorder

DOCS = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
START_CALC = "def add(a, b):\n    return a + b\n"
NEW_CALC = START_CALC + "\n\ndef sub(a, b):\n    return a - b\n"
PIP_CLIS = {
    "mini-swe-agent": ("mini-swe-agent==2.4.6", "mini"),
    "Aider": ("aider-chat==0.86.2", "aider"),
}
"""Heading of the CLI's section in docs/providers.md: (pip requirement, executable)."""
INSTALL_TIMEOUT_S = 900


def cache_root() -> Path:
    default = Path.home() / ".cache" / "semspec-tests" / "agent-clis"
    return Path(os.environ.get("SEMSPEC_AGENT_CLI_CACHE", default))


def unavailable(reason: str) -> None:
    """Skip, or fail on CI, where every CLI must be tested."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def pip_cli(requirement: str, executable: str) -> Path:
    """The executable of ``requirement`` in its own cached virtual environment."""
    venv = cache_root() / ("pip-" + requirement.replace("==", "-"))
    program = venv / "bin" / executable
    if program.exists():
        return program
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", requirement],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        unavailable(f"{requirement} could not be installed: {exc}")
    if done.returncode != 0 or not program.exists():
        unavailable(f"{requirement} could not be installed from PyPI: {done.stderr[-500:]}")
    return program


@pytest.fixture(scope="session")
def bwrap() -> None:
    if sandbox_for("bwrap").bwrap is None:
        unavailable("bubblewrap does not work here")


def documented_role(heading: str, base_url: str, program: Path) -> dict[str, Any]:
    """The developer role of the CLI's section of docs/providers.md, on the fake server's port
    and with the installed executable's full path."""
    page = DOCS.read_text(encoding="utf-8")
    section = page.split(f"#### {heading} ", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, f"docs/providers.md has no config block for {heading}"
    role: dict[str, Any] = yaml.safe_load(block.group(1))["models"]["developer"]
    role["base_url"] = base_url
    executable, rest = role["command"].split(" ", 1)
    assert executable == program.name
    role["command"] = f"{program} {rest}"
    return role


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A repository under /tmp and its task's worktree in the run folder."""
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "calc.py").write_text(START_CALC, encoding="utf-8")
    (repo / ".semspec").mkdir()
    (repo / ".semspec" / "config.yaml").write_text("gates: {sandbox: bwrap}\n", encoding="utf-8")
    subprocess.run([*git, "-C", str(repo), "add", "calc.py"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "start"], check=True)
    worktree = repo / ".semspec" / "run" / "worktrees" / "t1"
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "-q", "-b", "semspec/task/t1", str(worktree)],
        check=True,
    )
    yield repo, worktree


def task(worktree: Path) -> DeveloperRequest:
    return DeveloperRequest(
        task_id="t1",
        title="Add a sub function",
        description="calc.py has add(a, b); add sub(a, b) next to it.",
        criteria=["sub(3, 1) returns 2"],
        task_files=["calc.py"],
        worktree=str(worktree),
        iteration=1,
    )


def changed(worktree: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(worktree), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(line[3:] for line in done.stdout.splitlines())


EDIT_COMMAND = "printf '\\n\\ndef sub(a, b):\\n    return a - b\\n' >> calc.py"
AIDER_EDIT = (
    "calc.py\n```python\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a + b\n\n\n"
    "def sub(a, b):\n    return a - b\n>>>>>>> REPLACE\n```\n"
)
SCRIPTS: dict[str, list[FakeReply]] = {
    "mini-swe-agent": [
        call("bash", {"command": EDIT_COMMAND}),
        call("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
    ],
    "Aider": [text(AIDER_EDIT)],
}
"""The model's side of a run that adds ``sub``, in each CLI's own action format."""


@pytest.mark.parametrize("cli", sorted(PIP_CLIS))
async def test_the_documented_cli_config_edits_the_worktree_fenced(
    cli: str,
    bwrap: None,
    project: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requirement, executable = PIP_CLIS[cli]
    program = pip_cli(requirement, executable)
    repo, worktree = project
    with FakeLLMServer(SCRIPTS[cli]) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-agent-cli-key")
        role = RoleModel(**documented_role(cli, server.base_url, program))
        recorder = Recorder()

        result = await developer_for(role, repo).develop(task(worktree), recorder)
        calls = len(server.requests)

    assert result.outcome == "submitted", result.summary
    assert (worktree / "calc.py").read_text(encoding="utf-8") == NEW_CALC
    assert changed(worktree) == ["calc.py"]  # no history, cache or trajectory left behind
    assert calls == len(SCRIPTS[cli])
    steps = [(step.kind, step.tool, step.error) for step in recorder.steps]
    if cli == "mini-swe-agent":  # watched step by step in its trajectory file
        assert steps == [("model", None, False), ("tool", "bash", False)] * 2
        assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 10)
    else:  # one step per run
        assert steps == [("tool", executable, False)]
    home = repo / ".semspec" / "run" / "agent-homes" / "t1"
    assert home.is_dir()
    if cli == "mini-swe-agent":  # its trajectory went to its private home
        assert (home / ".config" / "mini-swe-agent" / "last_mini_run.traj.json").is_file()


async def test_a_looping_mini_swe_agent_is_stopped_between_two_steps_from_its_trajectory(
    bwrap: None, project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    requirement, executable = PIP_CLIS["mini-swe-agent"]
    program = pip_cli(requirement, executable)
    repo, worktree = project
    with AgentModelServer(after=calls("bash", {"command": "ls"})) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-agent-cli-key")
        role = RoleModel(**documented_role("mini-swe-agent", server.base_url, program))
        recorder = Recorder(stop="halt", stop_at=6)

        result = await developer_for(role, repo).develop(task(worktree), recorder)
        calls_made = len(server.turns)

    assert result.stopped == "halt", result.summary
    assert len(recorder.steps) >= 6
    # Killed between two steps, not at timeout_s (1800 s): a poll or two after the sixth step.
    assert calls_made < 15
