"""``keep_worktree``: read from the config and the task file, checked, and signed only when set."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from semspec.client.task_spec import build_task_input, draft_from_yaml
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import TaskSpecError
from semspec.core.owner_key import digest
from semspec.workflow.task.messages import start_fields
from tests.support.tasks import GOOD_CALC, write_script


def task_file(repo: Path, **keys: Any) -> Path:
    write_script(repo / "approve.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}}])
    body = {"title": "add sub", "files": ["calc.py"], "script": "approve.yaml", **keys}
    path = repo / "task.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def config(keep: bool) -> SemspecConfig:
    return SemspecConfig.model_validate({"loop": {"keep_worktrees": keep}})


@pytest.mark.parametrize(
    ("configured", "written", "kept"),
    [(False, None, False), (True, None, True), (False, True, True), (True, False, False)],
)
def test_the_task_files_keep_worktree_wins_over_the_configs(
    git_repo: Path, configured: bool, written: bool | None, kept: bool
) -> None:
    keys = {"keep_worktree": written} if written is not None else {}
    inp = build_task_input(
        draft_from_yaml(task_file(git_repo, **keys)), config(configured), git_repo
    )
    assert inp.spec.keep_worktree is kept


def test_keep_worktree_that_is_not_true_or_false_is_refused_by_name(git_repo: Path) -> None:
    with pytest.raises(TaskSpecError) as refused:
        draft_from_yaml(task_file(git_repo, keep_worktree="yes"))
    assert refused.value.field == "keep_worktree"
    assert "true or false" in refused.value.message


def test_an_input_that_does_not_keep_its_worktree_signs_as_before_the_field_existed(
    git_repo: Path,
) -> None:
    inp = build_task_input(draft_from_yaml(task_file(git_repo)), config(False), git_repo)
    body = asdict(inp)
    body.pop("start_signature")
    # Signed before the field existed: no key at all (nor the other fields added since, unset).
    older = {**body, "spec": {k: v for k, v in body["spec"].items() if k != "keep_worktree"}}
    assert start_fields("task-x", inp)["input"] == digest(_without_unset_later(older))
    kept = replace(inp, spec=replace(inp.spec, keep_worktree=True))
    assert start_fields("task-x", kept)["input"] != start_fields("task-x", inp)["input"]


def _without_unset_later(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the other later fields that are unset (they sign as absent too)."""
    spec = {k: v for k, v in body["spec"].items() if not (k == "auto_land" and not v)}
    top = {k: v for k, v in body.items() if not (k == "wait_for" and not v)}
    return {**top, "spec": spec}
