"""Scenario: what a person sees of the CLI on a real stack, every command a subprocess with its
stdout a pipe (a CI log, ``| less``, a script), no ``COLUMNS`` set.

- Ctrl-C during ``task submit --wait`` exits 130, says the task goes on and how to follow or
  cancel it; the task does go on to its end.
- Addresses and the suggested ``escalations resolve`` commands are never cut or wrapped; retries
  read used/allowed, never more used than allowed.
- A model without a price reads ``unpriced (model ...)`` in ``task status`` and ``usage``, never
  ``$0.0000``.
- ``monitor events --json`` prints one JSON array.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_task import (
    TASK_CRITERION,
    approve_reply,
    developer_replies,
    fake_model_entry,
)
from tests.support.scenario_tasks import APPROVE, new_id
from tests.support.stack import Stack, check_gate, cli_env, make_sample_repo, write_script
from tests.support.tasks import GOOD_CALC

EXIT_INTERRUPTED = 130
EXIT_ESCALATED = 3
SLOW_GATE_S = 6
"""A gate this slow keeps the task running while the test presses Ctrl-C."""
BROKEN = "def add(a, b):\n    return a - b\n"


def piped(
    stack: Stack, repo: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m semspec --repo REPO ARGS`` with stdout a pipe and no ``COLUMNS`` (rich would
    otherwise wrap at 80)."""
    env = {k: v for k, v in (stack.env or _env()).items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _env() -> dict[str, str]:
    return cli_env()


def sibling(stack: Stack, name: str, gates: list[dict[str, Any]], **sections: Any) -> Path:
    config: dict[str, Any] = {
        "project": {"name": name, "base_branch": "main"},
        "gates": {"preset": "none", "additional": gates},
        "loop": {"max_retries": 1, "activity_attempts": 2},
        **sections,
    }
    return stack.sibling_repo(name, config)


def test_ctrl_c_in_submit_wait_says_the_task_goes_on_and_how_to_follow_it(stack: Stack) -> None:
    repo = sibling(
        stack, "walk-ctrl-c", [check_gate(before=f"import time; time.sleep({SLOW_GATE_S})")]
    )
    task_id = new_id("ctrl-c")
    script = write_script(
        stack.root / "scripts" / f"{task_id}.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    argv = [
        sys.executable, "-m", "semspec", "--repo", str(repo), "task", "submit", "walk",
        "--id", task_id, "--file", "calc.py", "--criterion", "add adds", "--script",
        str(script), "--wait",
    ]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=stack.env or _env()
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 90
        seen = ""
        while f"submitted task {task_id}" not in seen:
            assert time.monotonic() < deadline, f"never submitted: {seen}"
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                assert line, (
                    f"submit ended early: {proc.wait()} {proc.stderr.read() if proc.stderr else ''}"
                )
                seen += line
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_INTERRUPTED, err
    lines = err.splitlines()
    assert lines[0] == f"interrupted: task {task_id} goes on running on the worker", err
    assert f"  follow it: semspec task status {task_id}" in lines
    assert f"  its history: semspec task logs {task_id}" in lines
    assert f"  cancel it: semspec task cancel {task_id}" in lines
    assert "Traceback" not in err
    done = stack.wait_status(task_id, lambda s: bool(s["outcome"]), 120, repo=repo)
    assert done["outcome"] == "approved"  # Ctrl-C stopped the following, not the task


def test_piped_status_keeps_addresses_and_resolve_commands_whole(stack: Stack) -> None:
    status = piped(stack, stack.repo, "status")
    assert status.returncode == 0, status.stderr
    address = stack.nats_address()
    assert len(address) > 16
    assert any(address in line for line in status.stdout.splitlines()), status.stdout
    assert not any(ch in status.stdout for ch in "│┃")

    repo = sibling(stack, "walk-escalate", [check_gate()])
    task_id = new_id("a-task-whose-id-is-long-enough-to-wrap")
    # Two different broken changes: retry 1 of 1, then the bound escalates.
    iterations = [{"developer": {"write": {"calc.py": f"{BROKEN}# try {n}\n"}}} for n in range(2)]
    submitted = stack.submit_scripted(task_id, iterations, "--wait", repo=repo)
    assert submitted.returncode == EXIT_ESCALATED, submitted.stderr
    shown = piped(stack, repo, "task", "status", task_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "retries: 1/1, none left" in shown.stdout, shown.stdout
    assert "2/1" not in shown.stdout
    command = f"semspec escalations resolve {task_id} --action abort"
    line = next(line for line in lines if command in line)
    assert len(line) > 80  # a line rich would have wrapped at 80 columns
    assert line.endswith(command)
    piped(stack, repo, "escalations", "resolve", task_id, "--action", "abort")


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer.for_roles() as server:
        yield server


def test_a_model_without_a_price_reads_unpriced_with_its_name(
    stack: Stack, llm: FakeLLMServer
) -> None:
    role = {
        "provider": "openai",
        "model": "fake-model",
        "base_url": llm.base_url,
        "timeout_s": 20,
        "max_steps": 12,
    }
    name = "walk-unpriced"
    repo = make_sample_repo(
        stack.root / name / "repo",
        {
            "project": {"name": name, "base_branch": "main"},
            "gates": {"preset": "none", "additional": [check_gate()]},
            "loop": {"max_retries": 1, "activity_attempts": 2},
            "models": {"developer": role, "reviewer": role},
            "services": {
                "nats": stack.nats_section(),
                "temporal": {"address": stack.temporal_address()},
                "run_dir": str(stack.root / name / "run"),
            },
            "security": {"owner_key": str(stack.owner_key_path)},
        },
        {
            "README.md": f"# {name}\n",
            ".semspec/models.yaml": yaml.safe_dump(
                {"models": {"fake-model": fake_model_entry(llm.base_url)}}
            ),
        },
    )
    llm.push(*developer_replies(), route="developer")
    llm.push(approve_reply(), route="reviewer")
    task_id = new_id("unpriced")
    done = piped(
        stack, repo, "task", "submit", "Add a sub function", "--id", task_id,
        "--file", "calc.py", "--criterion", TASK_CRITERION, "--wait", timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    status = piped(stack, repo, "task", "status", task_id)
    cost = next(line for line in status.stdout.splitlines() if line.startswith("  cost: "))
    assert cost.startswith("  cost: unpriced (model fake-model) ("), cost
    assert "$0.0000" not in status.stdout
    usage = piped(stack, repo, "usage")
    row = next(line for line in usage.stdout.splitlines() if line.split()[:1] == [task_id])
    assert "unpriced (model fake-model)" in row, usage.stdout
    assert "$0.0000" not in row

    events = piped(stack, repo, "monitor", "events", task_id, "--json")
    assert events.returncode == 0, events.stderr
    parsed = json.loads(events.stdout)
    assert isinstance(parsed, list) and parsed
    assert {event["task_id"] for event in parsed} == {task_id}
    lines = piped(stack, repo, "monitor", "events", task_id).stdout.splitlines()
    assert len(lines) == len(parsed)
