"""``land: auto | manual``: where it is read (config, task file, plan file, ``--land``), how it is
signed, and what the developer is told when a land fails and the work starts again."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.client.plan_spec import load_plan
from semspec.client.task_spec import build_task_input, draft_from_yaml
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import TaskSpecError
from semspec.core.owner_key import digest
from semspec.core.reasons import FallbackReason
from semspec.workflow.land.landing import CONFLICT, LandResult
from semspec.workflow.task.loop.landing import LandFailure, _question, _redo_feedback
from semspec.workflow.task.messages import LATER_FIELDS, Workspace, start_fields
from semspec.workflow.task.restart_activity import RestartStep
from tests.support.tasks import GOOD_CALC, write_script

APPROVE = {"verdict": "approve", "summary": "ok"}


def config(land: str = "manual") -> SemspecConfig:
    return SemspecConfig.model_validate({"loop": {"land": land}})


def task_file(repo: Path, **keys: Any) -> Path:
    write_script(
        repo / "approve.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    body = {"title": "add sub", "files": ["calc.py"], "script": "approve.yaml", **keys}
    path = repo / "task.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("configured", "written", "lands"),
    [
        ("manual", None, False),
        ("auto", None, True),
        ("manual", "auto", True),
        ("auto", "manual", False),
    ],
)
def test_the_task_files_land_wins_over_the_configs(
    git_repo: Path, configured: str, written: str | None, lands: bool
) -> None:
    keys = {"land": written} if written else {}
    draft = draft_from_yaml(task_file(git_repo, **keys))
    inp = build_task_input(draft, config(configured), git_repo)
    assert inp.spec.auto_land is lands


def test_a_land_other_than_auto_or_manual_is_an_error_naming_the_key(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError) as caught:
        draft_from_yaml(task_file(git_repo, land="yes"))
    assert caught.value.field == "land"
    assert "auto or manual" in str(caught.value)


def test_a_plans_land_is_its_tasks_unless_a_task_names_its_own(git_repo: Path) -> None:
    task_file(git_repo)  # the script
    tasks = [
        {"id": "a", "title": "a", "files": ["calc.py"], "script": "approve.yaml"},
        {"id": "b", "title": "b", "files": ["calc.py"], "script": "approve.yaml", "land": "manual"},
    ]
    path = git_repo / "plan.yaml"
    path.write_text(yaml.safe_dump({"title": "p", "land": "auto", "tasks": tasks}), "utf-8")
    plan = load_plan(path, SemspecConfig(), git_repo)
    assert {t.input.spec.task_id: t.input.spec.auto_land for t in plan.tasks} == {
        "a": True,
        "b": False,
    }


def test_a_task_that_does_not_land_itself_signs_as_before_the_field_existed(
    git_repo: Path,
) -> None:
    inp = build_task_input(draft_from_yaml(task_file(git_repo)), SemspecConfig(), git_repo)
    older = _unset_later_fields_removed(asdict(inp))
    assert "auto_land" not in older["spec"]
    older.pop("start_signature")
    assert start_fields("task-x", inp)["input"] == digest(older)
    landing = replace(inp, spec=replace(inp.spec, auto_land=True))
    assert start_fields("task-x", landing)["input"] != digest(older)


def _unset_later_fields_removed(value: Any) -> Any:
    """The input as code from before the later fields wrote it: without them."""
    if isinstance(value, dict):
        return {
            k: _unset_later_fields_removed(v)
            for k, v in value.items()
            if not (k in LATER_FIELDS and not v)
        }
    return value


def test_the_developer_is_told_the_files_the_moved_base_and_the_change_approved_before() -> None:
    result = LandResult(
        CONFLICT,
        "rebase",
        base_before="a" * 40,
        conflicts=["mdurl/_format.py"],
        message="rebase of t on main conflicts in mdurl/_format.py",
    )
    failed = LandFailure(FallbackReason.LAND_CONFLICT, _question(result, "main"), result)
    step = RestartStep(Workspace("/w", "semspec/task/t", "b" * 40), "-old\n+new\n", False)
    told = _redo_feedback(failed, "main", "b" * 40, step)
    assert "did not land on main: rebase of t on main conflicts in mdurl/_format.py" in told
    assert f"main as it is at {'b' * 12}" in told
    assert "Conflicting files: mdurl/_format.py." in told
    assert "```diff\n-old\n+new\n" in told
    assert failed.message.startswith("approved, not landed: rebase of t")
    assert "retry:" in failed.message and "abort:" in failed.message
