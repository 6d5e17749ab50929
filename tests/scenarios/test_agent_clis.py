"""The real agent CLIs, installed at their pinned versions, run as docs/providers.md configures
them: fenced by bubblewrap, on a repository under ``/tmp``, against the fake OpenAI-compatible
server on loopback (issue 24).

Each CLI is installed once into a cache folder (``SEMSPEC_AGENT_CLI_CACHE``, default
``~/.cache/semspec-tests/agent-clis``) in a virtual environment of its own. Where the registry
cannot be reached the tests skip with the reason, except on CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.agents.llm_factory import developer_for
from semspec.agents.protocol import DeveloperRequest
from semspec.core.config.models import RoleModel
from semspec.core.sandbox import sandbox_for
from tests.agents.test_agent_steps import Recorder
from tests.fakes.agent_model_server import AgentModelServer, AgentReply, Step, calls, says, slowly

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


@contextmanager
def installing(folder: Path) -> Iterator[None]:
    """Held while one test process installs into ``folder``: another one (``pytest -n``) that
    wants the same CLI waits, then finds it installed."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def pip_cli(requirement: str, executable: str) -> Path:
    """The executable of ``requirement`` in its own cached virtual environment."""
    venv = cache_root() / ("pip-" + requirement.replace("==", "-"))
    program = venv / "bin" / executable
    if program.exists():
        return program
    with installing(venv):
        if not program.exists():
            install(venv, requirement)
    if not program.exists():
        unavailable(f"{requirement} installed no {executable}")
    return program


def install(venv: Path, requirement: str) -> None:
    """A virtual environment at ``venv`` with ``requirement`` installed from PyPI."""
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
    if done.returncode != 0:
        unavailable(f"{requirement} could not be installed from PyPI: {done.stderr[-500:]}")


NPM_CLIS = {
    "Claude Code": ("@anthropic-ai/claude-code@2.1.197", "claude"),
    "Codex CLI": ("@openai/codex@0.171.0", "codex"),
}


def npm_cli(package: str, executable: str) -> Path:
    """The executable of the npm ``package`` installed in its own cached prefix."""
    prefix = cache_root() / ("npm-" + package.lstrip("@").split("/")[-1].replace("@", "-"))
    program = prefix / "node_modules" / ".bin" / executable
    if program.exists():
        return program
    with installing(prefix):
        if not program.exists():
            npm_install(prefix, package)
    if not program.exists():
        unavailable(f"{package} installed no {executable}")
    return program


def npm_install(prefix: Path, package: str) -> None:
    """The npm ``package`` installed under ``prefix`` from the npm registry."""
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        unavailable(f"{package} could not be installed with npm: {exc}")
    if done.returncode != 0:
        unavailable(f"{package} could not be installed from npm: {done.stderr[-500:]}")


@pytest.fixture(scope="session")
def bwrap() -> None:
    if sandbox_for("bwrap").bwrap is None:
        unavailable("bubblewrap does not work here")


PLACEHOLDER_SERVER = "http://127.0.0.1:8000"
"""The model server the docs' configs name; the tests put the fake server's address there."""


def documented_role(heading: str, server: AgentModelServer, program: Path) -> dict[str, Any]:
    """The developer role of the CLI's section of docs/providers.md, on the fake server's port
    and with the installed executable's full path; nothing else is changed."""
    page = DOCS.read_text(encoding="utf-8")
    section = page.split(f"#### {heading} ", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, f"docs/providers.md has no config block for {heading}"
    role: dict[str, Any] = yaml.safe_load(block.group(1))["models"]["developer"]
    for key in ("base_url", "command"):
        role[key] = role[key].replace(PLACEHOLDER_SERVER, server.root_url)
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
AIDER_STALE_EDIT = (
    "calc.py\n```python\n<<<<<<< SEARCH\n    return a * b\n=======\n    return a - b\n"
    ">>>>>>> REPLACE\n```\n"
)
"""An edit whose SEARCH text is not in the file: Aider sends the failure back, every time."""
MINI_SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MODEL, NO_ERROR = "model", False
MINI_LOOP_REPLY_S = 0.5
"""How long the fake model takes to answer each repeat of mini-swe-agent's loop."""


@dataclass(frozen=True)
class Cli:
    """One agent CLI: where it comes from, the model's side of a run that adds ``sub`` in its
    own action format, what it needs exported, and the steps and tokens semspec should see."""

    heading: str
    """Its section of docs/providers.md."""
    install: Callable[[], Path]
    edit: list[AgentReply]
    env: Callable[[AgentModelServer], dict[str, str]]
    steps: list[tuple[str, str | None, bool]]
    tokens: tuple[int, int] | None
    """(input, output) the run reports; None for a CLI that reports none."""
    loop: Step
    """A reply that, given again and again, keeps the agent running the same command."""
    loop_rule: str = "repeated_action"
    """The step rule that stops the loop."""


def openai_env(server: AgentModelServer) -> dict[str, str]:
    return {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-fake-agent-cli-key"}


def anthropic_env(server: AgentModelServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.root_url, "ANTHROPIC_API_KEY": "sk-ant-fake-cli-key"}


CLIS = {
    "claude": Cli(
        "Claude Code",
        lambda: npm_cli(*NPM_CLIS["Claude Code"]),
        [calls("Bash", {"command": EDIT_COMMAND, "description": "add sub"}), says("Added sub.")],
        anthropic_env,
        # Each message, the Bash call, and the tokens of the run's totals the lines left out.
        [(MODEL, None, NO_ERROR), ("tool", "Bash", NO_ERROR)] + [(MODEL, None, NO_ERROR)] * 2,
        # Two turns of (100, 20), though each message line says (100, 1): the rest comes from
        # the result's totals. (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC drops the session
        # title request; test_cli_stream_counts counts one.)
        (200, 40),
        calls("Bash", {"command": "ls", "description": "list"}),
    ),
    "codex": Cli(
        "Codex CLI",
        lambda: npm_cli(*NPM_CLIS["Codex CLI"]),
        [calls("exec_command", {"cmd": EDIT_COMMAND}), says("Added sub.")],
        openai_env,
        [("tool", "command_execution", NO_ERROR), (MODEL, None, NO_ERROR)],
        (200, 40),
        calls("exec_command", {"cmd": "ls"}),
    ),
    "aider": Cli(
        "Aider",
        lambda: pip_cli(*PIP_CLIS["Aider"]),
        [says(AIDER_EDIT)],
        openai_env,
        # Watched in its LLM history file: the reply, and its edit (applied: nothing came back).
        [(MODEL, None, NO_ERROR), ("tool", "edit", NO_ERROR)],
        None,
        says(AIDER_STALE_EDIT),
        "repeated_failure",
    ),
    "mini-swe-agent": Cli(
        "mini-swe-agent",
        lambda: pip_cli(*PIP_CLIS["mini-swe-agent"]),
        [calls("bash", {"command": EDIT_COMMAND}), calls("bash", {"command": MINI_SUBMIT})],
        openai_env,
        # Watched step by step in its trajectory file.
        [(MODEL, None, NO_ERROR), ("tool", "bash", NO_ERROR)] * 2,
        (200, 40),
        # mini-swe-agent takes a step in a fraction of a second against an instant model; the
        # monitor's pause has to go from its trajectory file through NATS and back, and a run
        # that repeats 4 more times first reaches the halt before the workflow acted on the
        # pause. A model as slow as a real one (seconds a reply) leaves the pause its time.
        slowly(calls("bash", {"command": "ls"}), MINI_LOOP_REPLY_S),
    ),
}


@pytest.mark.parametrize("name", sorted(CLIS))
async def test_the_documented_cli_config_edits_the_worktree_fenced(
    name: str,
    bwrap: None,
    project: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cli = CLIS[name]
    program = cli.install()
    repo, worktree = project
    with AgentModelServer(cli.edit) as server:
        for key, value in cli.env(server).items():
            monkeypatch.setenv(key, value)
        role = RoleModel(**documented_role(cli.heading, server, program))
        recorder = Recorder()

        result = await developer_for(role, repo).develop(task(worktree), recorder)
        turns = len(server.turns)

    assert result.outcome == "submitted", result.summary
    assert (worktree / "calc.py").read_text(encoding="utf-8") == NEW_CALC
    assert changed(worktree) == ["calc.py"]  # no history, cache or trajectory left behind
    assert turns == len(cli.edit)
    assert [(step.kind, step.tool, step.error) for step in recorder.steps] == cli.steps
    if cli.tokens is not None:
        assert (result.usage.input_tokens, result.usage.output_tokens) == cli.tokens
    else:
        assert result.usage.unpriced
    assert (repo / ".semspec" / "run" / "agent-homes" / "t1").is_dir()
