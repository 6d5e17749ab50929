"""The demo's sample repository and scripts, checked without any services."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest

from agents.scripted import load_script
from semspec.config import load_config
from semspec.config.models import SemspecConfig
from semspec.demo.sample import create_sample_repo, gate_command
from semspec.demo.story import DEMO_TASKS, MUL_TASK, SUB_TASK, DemoTask
from semspec.services.connect import Endpoints
from workflow.gates.presets import resolve_gates

ENDPOINTS = Endpoints(
    nats_url="nats://127.0.0.1:4999",
    temporal_address="127.0.0.1:7999",
    namespace="demo-ns",
    task_queue="demo-queue",
    ui_url="http://127.0.0.1:8999",
)


def _gate_passes(worktree: Path) -> bool:
    done = subprocess.run(
        gate_command(), shell=True, cwd=worktree, capture_output=True, text=True, timeout=120
    )
    return done.returncode == 0


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return create_sample_repo(tmp_path / "calc", ENDPOINTS, SemspecConfig()).path


def test_the_sample_commits_its_project_config_and_scripts_on_main(sample: Path) -> None:
    repo = pygit2.Repository(str(sample))
    tree = repo.lookup_branch("main").peel(pygit2.Commit).tree
    for path in ("calc.py", "tests/test_calc.py", ".semspec/config.yaml", ".semspec/demo/sub.yaml"):
        assert tree[path] is not None
    assert not repo.status()  # nothing left uncommitted


def test_the_sample_config_has_a_required_pytest_gate_and_points_at_the_stack(
    sample: Path,
) -> None:
    config = load_config(sample, environ={})
    gates = resolve_gates(config.gates)
    assert [(g.name, g.required) for g in gates] == [("test", True)]
    assert "-m pytest" in gates[0].command
    assert config.services.temporal.address == "127.0.0.1:7999"
    assert config.services.temporal.task_queue == "demo-queue"
    assert config.services.nats.url == "nats://127.0.0.1:4999"


def test_every_demo_script_is_a_valid_scripted_agent_script(sample: Path) -> None:
    for task in DEMO_TASKS:
        script = load_script(sample / ".semspec" / "demo" / f"{task.key}.yaml")
        assert len(script.iterations) == len(task.iterations)


def test_the_gate_passes_on_main(sample: Path) -> None:
    assert _gate_passes(sample)


@pytest.mark.parametrize(
    ("task", "expected"),
    [(SUB_TASK, [False, True, True]), (MUL_TASK, [False, False, True])],
    ids=["sub", "mul"],
)
def test_each_scripted_iteration_fails_or_passes_the_gate_as_the_story_needs(
    sample: Path, tmp_path: Path, task: DemoTask, expected: list[bool]
) -> None:
    results = []
    for index, iteration in enumerate(task.iterations):
        copy = tmp_path / f"{task.key}-{index}"
        shutil.copytree(sample, copy, ignore=shutil.ignore_patterns(".git"))
        for rel, text in iteration["developer"]["write"].items():
            (copy / rel).write_text(text, encoding="utf-8")
        results.append(_gate_passes(copy))
    assert results == expected


def test_task_two_repeats_exactly_the_same_change_before_the_human_answers() -> None:
    first, second, fixed = (i["developer"]["write"] for i in MUL_TASK.iterations)
    assert first == second
    assert fixed != first
