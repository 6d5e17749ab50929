"""Inside the fence a command agent has a private writable home per task, and its worktree's git
metadata stays visible even when the repository lies under the private ``/tmp`` (issue 24)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from semspec.agents.command_developer import AGENT_HOMES, CommandDeveloper, CommandFencing
from semspec.agents.protocol import DeveloperRequest
from semspec.core.sandbox import sandbox_for

AGENT = """
import os, pathlib, subprocess
home = pathlib.Path(os.environ["HOME"])
(home / ".config" / "agent-state").write_text("kept")
print("HOME", home)
print("XDG", os.environ["XDG_CONFIG_HOME"])
done = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True)
print("GIT", done.returncode, done.stdout.strip(), done.stderr.strip())
pathlib.Path("edited.txt").write_text("yes")
"""


@pytest.fixture
def bwrap_works() -> None:
    if sandbox_for("bwrap").bwrap is None:
        pytest.skip("bubblewrap does not work here")


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


async def test_a_fenced_agent_gets_a_private_home_and_git_in_a_worktree_under_tmp(
    bwrap_works: None, tmp_path: Path
) -> None:
    assert str(tmp_path).startswith("/tmp/"), "the case is a repository the private /tmp hides"
    repo, run_dir = tmp_path / "repo", tmp_path / "run"
    git("init", "-q", "-b", "main", str(repo))
    (repo / "a.txt").write_text("a\n")
    git("-C", str(repo), "add", ".")
    git("-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    worktree = run_dir / "worktrees" / "t1"
    git("-C", str(repo), "worktree", "add", "-q", "-b", "semspec/task/t1", str(worktree))
    (worktree / "agent.py").write_text(AGENT, encoding="utf-8")
    fencing = CommandFencing("bwrap", (), (run_dir,))
    agent = CommandDeveloper(f"{sys.executable} agent.py", timeout_s=60, fencing=fencing)
    request = DeveloperRequest(
        task_id="t1",
        title="Probe",
        description="Probe the home.",
        criteria=["none"],
        task_files=["edited.txt"],
        worktree=str(worktree),
        iteration=1,
    )

    result = await agent.develop(request)

    home = run_dir / AGENT_HOMES / "t1"
    assert result.outcome == "submitted", result.summary
    assert f"HOME {home}" in result.summary and f"XDG {home}/.config" in result.summary
    assert (home / ".config" / "agent-state").read_text(encoding="utf-8") == "kept"
    assert "GIT 0 ?? agent.py" in result.summary
    assert not (Path.home() / ".config" / "agent-state").exists()
