"""Reading and validating ``plan.yaml``: tasks, dependencies, cycles and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.client.plan_spec import load_plan
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import TaskSpecError
from tests.support.tasks import GOOD_CALC, write_script

APPROVE = {"verdict": "approve", "summary": "ok"}


def write_plan(repo: Path, tasks: list[dict[str, Any]], **top: Any) -> Path:
    """A plan file in the repository; every task is played by one approving script."""
    write_script(
        repo / "approve.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    body = {"id": "p1", "title": "arithmetic", **top, "tasks": tasks}
    path = repo / "plan.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def task(task_id: str, *deps: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "title": f"task {task_id}",
        "files": ["calc.py"],
        "criteria": ["works"],
        "script": "approve.yaml",
        "depends_on": list(deps),
        **extra,
    }


def load(path: Path, repo: Path) -> Any:
    return load_plan(path, SemspecConfig(), repo)


def test_a_valid_plan_gives_each_task_a_validated_input_with_the_plan_id(git_repo: Path) -> None:
    plan = load(write_plan(git_repo, [task("b", "a"), task("a")]), git_repo)
    assert plan.plan_id == "p1"
    assert [t.input.spec.task_id for t in plan.tasks] == ["a", "b"]  # dependencies first
    assert [t.depends_on for t in plan.tasks] == [[], ["a"]]
    spec = plan.tasks[1].input.spec
    assert spec.plan_id == "p1"
    assert spec.task_files == ["calc.py"]
    assert spec.developer.script == str((git_repo / "approve.yaml").resolve())


def test_a_plan_without_an_id_gets_one_from_its_title(git_repo: Path) -> None:
    path = write_plan(git_repo, [task("a")], id=None)
    plan = load(path, git_repo)
    assert plan.plan_id.startswith("arithmetic-")
    assert plan.tasks[0].input.spec.plan_id == plan.plan_id


def test_an_unknown_dependency_is_an_error_naming_the_task(git_repo: Path) -> None:
    path = write_plan(git_repo, [task("a"), task("b", "zzz")])
    with pytest.raises(TaskSpecError, match="'b' depends on unknown task 'zzz'") as err:
        load(path, git_repo)
    assert err.value.field == "tasks.b.depends_on"
    assert err.value.hint is not None and "a, b" in err.value.hint


def test_a_dependency_cycle_is_an_error_naming_the_tasks_in_it(git_repo: Path) -> None:
    path = write_plan(git_repo, [task("a", "c"), task("b", "a"), task("c", "b"), task("d")])
    with pytest.raises(TaskSpecError, match="cycle a -> c -> b -> a"):
        load(path, git_repo)


def test_a_task_depending_on_itself_is_a_cycle(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError, match="cycle a -> a"):
        load(write_plan(git_repo, [task("a", "a")]), git_repo)


def test_a_duplicate_task_id_is_an_error(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError, match=r"tasks\.a\.id: appears twice"):
        load(write_plan(git_repo, [task("a"), task("a")]), git_repo)


def test_an_unknown_task_key_is_an_error_naming_task_and_key(git_repo: Path) -> None:
    path = write_plan(git_repo, [task("a", needs=["b"])])
    with pytest.raises(TaskSpecError, match="unknown key") as err:
        load(path, git_repo)
    assert err.value.field == "tasks.a.needs"


def test_a_task_without_an_id_is_an_error(git_repo: Path) -> None:
    bad = task("a")
    del bad["id"]
    with pytest.raises(TaskSpecError, match="needs a valid id") as err:
        load(write_plan(git_repo, [bad]), git_repo)
    assert err.value.field == "tasks[0].id"


def test_a_plan_task_may_name_a_file_it_will_create(git_repo: Path) -> None:
    plan = load(write_plan(git_repo, [task("a", files=["calc.py", "tests/test_sub.py"])]), git_repo)
    assert plan.tasks[0].input.spec.task_files == ["calc.py", "tests/test_sub.py"]


def test_a_task_file_outside_the_repository_names_the_plan_task(git_repo: Path) -> None:
    path = write_plan(git_repo, [task("a"), task("b", files=["../nope.py"])])
    with pytest.raises(TaskSpecError, match=r"^tasks\.b\.files: \.\./nope\.py is outside"):
        load(path, git_repo)


def test_a_plan_without_tasks_is_an_error(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError, match="non-empty list of tasks"):
        load(write_plan(git_repo, []), git_repo)


def test_a_missing_plan_file_is_an_error_naming_it(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError, match="not found"):
        load(git_repo / "missing.yaml", git_repo)
