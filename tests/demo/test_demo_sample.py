"""The demo's sample repository and scripts, checked without any services."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest

from semspec.agents.scripted import load_script
from semspec.core.config import load_config
from semspec.core.config.models import SemspecConfig
from semspec.demo.knowledge import knowledge_step
from semspec.demo.sample import SampleRepo, create_sample_repo, gate_command
from semspec.demo.sample_sops import CALC_SOP_ID, DOCS_SOP_ID, SAMPLE_SOPS
from semspec.demo.steps import STEPS
from semspec.demo.story import (
    DEMO_TASKS,
    DEVELOPER_WINDOW,
    LONG_REVIEW_TOKENS,
    MUL_TASK,
    README,
    STRAY_FILE,
    SUB_TASK,
    DemoTask,
)
from semspec.demo.tasks import task_input
from semspec.services.connect import Endpoints
from semspec.workflow.context.monitor import pressure_for
from semspec.workflow.gates.presets import resolve_gates
from semspec.workflow.task.scope import out_of_scope

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
def sample_repo(tmp_path: Path) -> SampleRepo:
    return create_sample_repo(tmp_path / "calc", ENDPOINTS, SemspecConfig())


@pytest.fixture
def sample(sample_repo: SampleRepo) -> Path:
    return sample_repo.path


def test_the_sample_commits_its_project_config_sops_and_scripts_on_main(sample: Path) -> None:
    repo = pygit2.Repository(str(sample))
    tree = repo.lookup_branch("main").peel(pygit2.Commit).tree
    committed = ["calc.py", "tests/test_calc.py", ".semspec/config.yaml", ".semspec/demo/sub.yaml"]
    for path in [*committed, *SAMPLE_SOPS]:
        assert tree[path] is not None
    assert not repo.status()  # nothing left uncommitted


def test_the_sample_sops_sync_and_only_the_python_one_reaches_task_ones_agents(
    sample_repo: SampleRepo,
) -> None:
    record = knowledge_step(sample_repo.path, task_input(sample_repo, SUB_TASK).spec)
    assert sorted(record.sync.added) == sorted(SAMPLE_SOPS)
    assert record.sync.failed == []
    reach = {s.sop_id: (s.in_reviewer_context, s.in_developer_prompt) for s in record.sops}
    assert reach == {CALC_SOP_ID: (True, True), DOCS_SOP_ID: (False, False)}


def test_task_one_cites_a_sop_the_sample_carries() -> None:
    cited = {
        finding.get("sop_id")
        for iteration in SUB_TASK.iterations
        for finding in iteration.get("reviewer", {}).get("findings", [])
    }
    assert CALC_SOP_ID in cited


def test_task_one_strays_outside_its_files_in_exactly_one_iteration() -> None:
    # Reported once, the scope-creep flag stays a flag; a second report climbs to a pause.
    allow = SemspecConfig().scope.allow
    readme, strays = README, []
    for iteration in SUB_TASK.iterations:
        readme = iteration["developer"]["write"].get(STRAY_FILE, readme)
        touched = [*SUB_TASK.files, *([STRAY_FILE] if readme != README else [])]
        strays.append(out_of_scope(touched, SUB_TASK.files, allow))
    assert strays == [[STRAY_FILE]] + [[]] * (len(SUB_TASK.iterations) - 1)


def test_the_long_review_alone_puts_the_developer_window_under_checkpoint_pressure() -> None:
    tokens = [i.get("reviewer", {}).get("tokens", 0) for i in SUB_TASK.iterations]
    assert LONG_REVIEW_TOKENS in tokens[:-1]  # a later iteration runs after the checkpoint
    pressure = pressure_for(LONG_REVIEW_TOKENS, DEVELOPER_WINDOW)
    assert pressure in ("red", "critical")


def test_the_sample_config_gives_the_developer_the_small_window(sample: Path) -> None:
    assert load_config(sample, environ={}).models.developer.context_window == DEVELOPER_WINDOW


def test_the_tasks_between_them_show_every_step_once() -> None:
    shown = [name for task in DEMO_TASKS for name in task.shows]
    assert sorted(shown) == sorted(name for _, name, _ in STEPS)


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
    [(SUB_TASK, [True, True, True]), (MUL_TASK, [False, False, True])],
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
