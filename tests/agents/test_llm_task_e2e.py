"""A whole task through the CLI: ``semspec up``, ``task submit --wait``, LLM agents, ``down``.

Both roles use the ``openai`` provider pointed at the fake OpenAI-compatible server on loopback;
the API key reaches the worker only through the environment ``semspec up`` passes on.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pygit2

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_task import (
    NEW_CALC,
    START_CALC,
    TASK_CRITERION,
    TASK_DESCRIPTION,
    TASK_TITLE,
    approve_reply,
    developer_replies,
    sample_repo,
    tool_names,
    user_prompt,
)

# Not SEMSPEC_*: those variables are config overrides.
KEY_ENV = "E2E_FAKE_LLM_API_KEY"
TASK_ID = "add-sub-e2e"


def semspec(
    repo: Path, *args: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI entry point in a subprocess against ``repo``."""
    return subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def log_files(repo: Path) -> list[Path]:
    """Every file under the services' log directory (worker, NATS, Temporal, gate logs)."""
    return sorted(p for p in (repo / ".semspec" / "run" / "logs").rglob("*") if p.is_file())


def test_a_task_submitted_on_the_cli_is_developed_reviewed_and_committed_by_llm_agents(
    tmp_path: Path,
) -> None:
    # Not shaped like a vendor key, so masking cannot hide a leak: it must never be written.
    key = f"e2e-{secrets.token_hex(16)}"
    env = {**os.environ, KEY_ENV: key, "SEMSPEC_LOG_FORMAT": "json"}
    with FakeLLMServer.for_roles(developer=developer_replies(), reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "repo", llm.base_url, KEY_ENV)
        try:
            up = semspec(repo, "up", "--json", env=env, timeout=120)
            assert up.returncode == 0, up.stderr
            submit = semspec(
                repo,
                "task",
                "submit",
                TASK_TITLE,
                "--id",
                TASK_ID,
                "--file",
                "calc.py",
                "--criterion",
                TASK_CRITERION,
                "--description",
                TASK_DESCRIPTION,
                "--wait",
                "--json",
                env=env,
                timeout=120,
            )
        finally:
            down = semspec(repo, "down", "--json", env=env, timeout=60)
        developer_calls = llm.requests_for("developer")
        reviewer_calls = llm.requests_for("reviewer")
        unused = (llm.remaining("developer"), llm.remaining("reviewer"))

    assert submit.returncode == 0, submit.stdout + submit.stderr
    status = json.loads(submit.stdout)
    assert status["outcome"] == "approved"
    assert status["iteration"] == 1
    assert down.returncode == 0, down.stderr
    states = {s["name"]: s["state"] for s in json.loads(down.stdout)}
    assert {"nats", "temporal", "worker"} <= set(states)
    assert set(states.values()) == {"stopped"}

    # The commit on the task branch holds the developer's file and names the LLM reviewer.
    git = pygit2.Repository(str(repo))
    commit = git.lookup_branch(f"semspec/task/{TASK_ID}").peel(pygit2.Commit)
    assert str(commit.id) == status["commit_id"]
    blob = git[commit.tree["calc.py"].id]
    assert isinstance(blob, pygit2.Blob)
    assert blob.data.decode() == NEW_CALC
    assert commit.parent_ids == [git.lookup_branch("main").peel(pygit2.Commit).id]
    assert "reviewer: openai:fake-model" in commit.message
    assert (repo / "calc.py").read_text() == START_CALC  # the user's checkout is untouched

    # Every scripted reply was used: the developer's five tool calls and the one verdict.
    assert unused == (0, 0)
    assert len(developer_calls) == 5
    assert len(reviewer_calls) == 1
    first = developer_calls[0].body
    assert tool_names(first) >= {"list_dir", "search", "read", "write_file", "submit"}
    task_text = user_prompt(first)
    assert TASK_TITLE in task_text
    assert TASK_DESCRIPTION in task_text
    assert TASK_CRITERION in task_text
    review = reviewer_calls[0].body
    assert tool_names(review) == set()
    assert "+def sub(a, b):" in user_prompt(review)
    assert "check" in user_prompt(review)

    # The key went to the server on every call, and into no log file.
    assert {r.header("Authorization") for r in developer_calls + reviewer_calls} == {
        f"Bearer {key}"
    }
    logs = log_files(repo)
    assert any(p.name == "worker.log" for p in logs)
    leaked = [p for p in logs if key in p.read_text(encoding="utf-8", errors="replace")]
    assert leaked == []
