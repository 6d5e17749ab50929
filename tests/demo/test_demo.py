"""``semspec demo`` end to end: the real CLI in a subprocess, on a stack it starts itself.

The stack belongs to a throwaway repository whose services use free ports; it is shared by
the tests of this module and always stopped with ``semspec down``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from semspec.client.task_client import wait_result
from semspec.demo.narrate import MARK
from semspec.demo.sample_sops import CALC_SOP_ID, DOCS_SOP_ID
from semspec.demo.steps import STEPS
from semspec.demo.story import STRAY_FILE

DEMO_TIMEOUT_S = 400.0
STACK_CONFIG = {
    "services": {"nats": {"port": 0}, "temporal": {"port": 0, "ui": True, "ui_port": 0}}
}


@dataclass
class StackRepo:
    """The repository whose stack the demo starts, and where demo samples go."""

    path: Path
    tmp: Path

    def semspec(
        self, *args: str, timeout: float = DEMO_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m semspec ARGS`` in the repository, as a user would."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
        env |= {"TMPDIR": str(self.tmp), "SEMSPEC_LOG_FORMAT": "json", "COLUMNS": "200"}
        return subprocess.run(
            [sys.executable, "-m", "semspec", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def demo(self, *args: str) -> tuple[dict[str, Any], str]:
        """Run ``semspec demo --json ARGS``; return its summary and its narration (stderr)."""
        done = self.semspec("demo", "--json", *args)
        assert done.returncode == 0, done.stderr[-3000:]
        summary: dict[str, Any] = json.loads(done.stdout)
        return summary, done.stderr


@pytest.fixture(scope="module")
def stack_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackRepo]:
    root = tmp_path_factory.mktemp("demo")
    path, tmp = root / "stack", root / "tmp"
    (path / ".semspec").mkdir(parents=True)
    tmp.mkdir()
    (path / ".semspec" / "config.yaml").write_text(yaml.safe_dump(STACK_CONFIG), encoding="utf-8")
    repo = StackRepo(path, tmp)
    try:
        yield repo
    finally:
        repo.semspec("down", timeout=120)


def _by_key(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {task["key"]: task for task in summary["tasks"]}


def assert_every_step_shown(summary: dict[str, Any], narration: str) -> None:
    """Each of the four steps is judged shown in the summary, called out as it happened, and
    ticked in the closing recap."""
    steps = {s["name"]: s for s in summary["steps"]}
    assert list(steps) == [name for _, name, _ in STEPS]
    for number, name, title in STEPS:
        step = steps[name]
        assert (step["number"], step["shown"]) == (number, True), step
        assert step["detail"], step
        assert f"{MARK} step {number} ({title})" in narration, name
        assert f"[yes] {number}. {title}" in narration, name
    assert "[NO ]" not in narration


def test_demo_with_yes_shows_all_four_steps_and_exits_0(stack_repo: StackRepo) -> None:
    summary, narration = stack_repo.demo("--yes")
    assert summary["ok"] is True
    assert_every_step_shown(summary, narration)
    steps = {s["name"]: s["task"] for s in summary["steps"]}
    assert steps == {"sops": "sub", "risk_signal": "sub", "escalation": "mul", "checkpoint": "sub"}
    sub, mul = _by_key(summary)["sub"], _by_key(summary)["mul"]

    # Step 1: the SOP matching the task files reached the reviewer and was cited.
    sops = {s["sop_id"]: s for s in summary["knowledge"]["sops"]}
    assert sops[CALC_SOP_ID]["in_reviewer_context"] is True
    assert sops[DOCS_SOP_ID]["in_reviewer_context"] is False
    assert [(c["iteration"], c["sop_id"]) for c in sub["sop_citations"]] == [(1, CALC_SOP_ID)]
    # Step 2: the scope-creep flag names the stray file and came before the first review.
    assert any(f.startswith("scope_creep") and STRAY_FILE in f for f in sub["flags"])
    assert sub["reviews_after_flag"][0] == 1
    # Step 4: one checkpoint from context pressure, a fresh run, and approval.
    [checkpoint] = sub["checkpoints"]
    assert checkpoint.startswith("context ") and "semspec/checkpoint/" in checkpoint
    assert sub["resumed"] == 1
    assert sub["state"] == "approved"
    assert sub["commit_id"]
    assert sub["verdicts"] == ["request_changes", "request_changes", "approve"]
    assert [g["passed"] for g in sub["gates"]] == [True, True, True]
    assert sub["escalations"] == []

    # Step 3: the repeated evidence escalated; the human's retry got the task approved.
    assert mul["state"] == "approved"
    assert mul["commit_id"]
    [escalation] = mul["escalations"]
    assert escalation["reason"] == "no_new_evidence"
    assert escalation["fingerprint"]
    assert escalation["resolution"] == "retry"
    assert mul["iterations"] == 3

    assert summary["ui_url"].startswith("http://127.0.0.1:")
    assert summary["kept"] is False
    assert not Path(summary["sample_repo"]).exists()
    assert summary["resolve_command"] is None
    # The sample is gone, so no command the demo printed may point into it.
    commands = [line for line in narration.splitlines() if "semspec --repo" in line]
    assert commands
    assert not [line for line in commands if summary["sample_repo"] in line]


async def test_demo_without_yes_leaves_task_two_escalated_and_its_printed_command_resolves_it(
    stack_repo: StackRepo,
) -> None:
    summary, narration = stack_repo.demo()
    assert summary["ok"] is True
    assert_every_step_shown(summary, narration)
    mul = _by_key(summary)["mul"]
    assert mul["state"] == "escalated"
    assert mul["commit_id"] is None
    assert [e["reason"] for e in mul["escalations"]] == ["no_new_evidence"]
    assert summary["kept"] is True
    assert Path(summary["sample_repo"]).is_dir()

    command = shlex.split(summary["resolve_command"])
    assert command[:3] == ["semspec", "--repo", str(stack_repo.path.resolve())]
    assert summary["resolve_command"] in narration
    done = stack_repo.semspec(*command[1:], timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    client = await Client.connect(summary["temporal_address"], namespace=summary["namespace"])
    result = await asyncio.wait_for(wait_result(client, mul["task_id"]), 120)
    assert result.outcome == "approved"
    assert result.commit_id


def test_demo_refuses_a_timeout_that_is_not_positive(stack_repo: StackRepo) -> None:
    done = stack_repo.semspec("demo", "--timeout", "0", timeout=60)
    assert done.returncode == 2
    assert "error: --timeout must be a positive number of seconds" in done.stderr
    assert "hint:" in done.stderr
