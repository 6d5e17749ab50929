"""Names in a task file (id, plan_id, base_branch) as YAML may type them."""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.client.task_spec import draft_from_yaml
from semspec.core.errors import TaskSpecError


def _task_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(f"title: Add sub\n{body}", encoding="utf-8")
    return path


def test_a_numeric_task_id_is_taken_as_text(tmp_path: Path) -> None:
    draft = draft_from_yaml(_task_file(tmp_path, "id: 42\nplan_id: 7\n"))
    assert (draft.task_id, draft.plan_id) == ("42", "7")


@pytest.mark.parametrize("body", ["id: [a, b]\n", "base_branch: {x: 1}\n", "plan_id: true\n"])
def test_a_name_that_is_not_text_is_refused_naming_the_key(tmp_path: Path, body: str) -> None:
    with pytest.raises(TaskSpecError) as caught:
        draft_from_yaml(_task_file(tmp_path, body))
    assert caught.value.field == body.split(":")[0]
