"""Dollar budgets as a user writes them: config, task and plan files, and ``--extra-usd``.

Everything here is refused (or taken) before any service is involved: the real CLI in a
subprocess for the exit codes and messages, the spec readers for the values they produce.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from semspec.client.plan_spec import load_plan
from semspec.client.task_spec import build_task_input, draft_from_yaml
from semspec.core.config import load_config
from semspec.core.errors import TaskSpecError
from tests.support.cli_process import semspec
from tests.support.stack import write_script

EXIT_BAD_INPUT = 2


def write_config(repo: Path, loop: dict[str, object]) -> None:
    folder = repo / ".semspec"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({"loop": loop}), encoding="utf-8")


def scripted(repo: Path) -> Path:
    """A valid script for the scripted roles (the tasks here never run)."""
    return write_script(repo.parent / "script.yaml", [{"developer": {"write": {"calc.py": ""}}}])


def test_extra_dollars_go_only_with_extend_budget(git_repo: Path) -> None:
    done = semspec(
        "--repo", str(git_repo), "escalations", "resolve", "t1", "--action", "approve",
        "--extra-usd", "5",
    )  # fmt: skip
    assert done.returncode == EXIT_BAD_INPUT
    assert "--extra-usd goes with --action extend-budget" in done.stderr


@pytest.mark.parametrize("amount", ["-1", "nan", "inf"])
def test_extra_dollars_must_be_a_finite_amount_of_at_least_zero(
    git_repo: Path, amount: str
) -> None:
    done = semspec(
        "--repo", str(git_repo), "escalations", "resolve", "t1", "--action", "extend-budget",
        "--extra-usd", amount,
    )  # fmt: skip
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    said = " ".join(done.stderr.split())
    assert "Invalid value for '--extra-usd'" in said or "must be a number of US dollars" in said


def test_config_validate_names_a_budget_that_is_not_positive(git_repo: Path) -> None:
    write_config(git_repo, {"max_cost_usd": 0})
    done = semspec("--repo", str(git_repo), "config", "validate")
    assert done.returncode == EXIT_BAD_INPUT
    assert "loop.max_cost_usd" in done.stdout + done.stderr


def test_a_task_file_budget_wins_over_the_configs(git_repo: Path) -> None:
    write_config(git_repo, {"max_cost_usd": 10})
    script = f"script: {scripted(git_repo)}\n"
    (git_repo / "task.yaml").write_text(
        "title: Add sub\nfiles: [calc.py]\nmax_cost_usd: 2.5\n" + script, encoding="utf-8"
    )
    plain = "title: Add sub\nfiles: [calc.py]\n" + script
    (git_repo / "plain.yaml").write_text(plain, encoding="utf-8")
    config = load_config(git_repo)
    own = build_task_input(draft_from_yaml(git_repo / "task.yaml"), config, git_repo)
    other = build_task_input(draft_from_yaml(git_repo / "plain.yaml"), config, git_repo)
    assert (own.limits.max_cost_usd, other.limits.max_cost_usd) == (2.5, 10.0)


@pytest.mark.parametrize("value", ["0", "-3", "true", "'5'", ".inf"])
def test_a_task_file_budget_must_be_a_positive_number(git_repo: Path, value: str) -> None:
    path = git_repo / "task.yaml"
    path.write_text(f"title: Add sub\nmax_cost_usd: {value}\n", encoding="utf-8")
    with pytest.raises(TaskSpecError) as refused:
        draft_from_yaml(path)
    assert refused.value.field == "max_cost_usd"


def test_a_plan_carries_its_budget_and_each_tasks_own(git_repo: Path) -> None:
    script = str(scripted(git_repo))
    plan = {
        "id": "p1",
        "title": "two parts",
        "max_cost_usd": 5,
        "tasks": [
            {"id": "a", "title": "A", "files": ["calc.py"], "max_cost_usd": 1.5, "script": script},
            {"id": "b", "title": "B", "files": ["calc.py"], "script": script},
        ],
    }
    path = git_repo / "plan.yaml"
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    inp = load_plan(path, load_config(git_repo), git_repo)
    assert inp.max_cost_usd == 5.0
    assert [t.input.limits.max_cost_usd for t in inp.tasks] == [1.5, None]


def test_a_plan_task_budget_that_is_not_a_number_names_the_task(git_repo: Path) -> None:
    plan = {"title": "p", "tasks": [{"id": "a", "title": "A", "max_cost_usd": "lots"}]}
    path = git_repo / "plan.yaml"
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    with pytest.raises(TaskSpecError) as refused:
        load_plan(path, load_config(git_repo), git_repo)
    assert refused.value.field == "tasks.a.max_cost_usd"
