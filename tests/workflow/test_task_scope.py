"""What counts as scope creep: task files, files the task creates, and allowed test files."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from semspec.core.config.models import ScopeConfig, SemspecConfig
from semspec.workflow.task.context_activities import check_budget
from semspec.workflow.task.messages import BudgetInput, RoleSpec, TaskSpec
from semspec.workflow.task.scope import out_of_scope

DEFAULTS = SemspecConfig().scope.allow

# (path, allowed besides the task files by default)
TEST_LOCATIONS = [
    ("tests/test_calc.py", True),
    ("tests/unit/helpers.py", True),
    ("pkg/tests/test_x.py", True),
    ("test/calc.spec.rb", True),
    ("web/src/__tests__/App.jsx", True),
    ("spec/models/user_spec.rb", True),
    ("go/parser/testdata/input.txt", True),
    ("test_calc.py", True),
    ("src/pkg/calc_test.py", True),
    ("conftest.py", True),
    ("src/conftest.py", True),
    ("server/handler_test.go", True),
    ("web/src/app.test.ts", True),
    ("web/src/App.spec.tsx", True),
    ("lib/util.test.js", True),
    ("README.md", False),
    ("calc.py", False),
    ("src/contest.py", False),
    ("latest/notes.py", False),
    ("testing.py", False),
    ("web/src/app.ts", False),
    ("mytests/a.py", False),
]


@pytest.mark.parametrize(("path", "allowed"), TEST_LOCATIONS)
def test_the_usual_test_locations_are_allowed_and_other_files_are_not(
    path: str, allowed: bool
) -> None:
    assert out_of_scope([path], ["app.py"], DEFAULTS) == ([] if allowed else [path])


def test_a_test_file_added_for_the_task_is_not_scope_creep() -> None:
    touched = ["calc.py", "tests/test_calc.py"]
    assert out_of_scope(touched, ["calc.py"], DEFAULTS) == []


def test_an_unrelated_file_is_scope_creep_even_beside_an_allowed_test() -> None:
    touched = ["calc.py", "tests/test_calc.py", "README.md", "docs/a.md"]
    assert out_of_scope(touched, ["calc.py"], DEFAULTS) == ["README.md", "docs/a.md"]


def test_a_file_the_task_named_and_created_is_inside_it() -> None:
    touched = ["calc.py", "mathx.py"]
    assert out_of_scope(touched, ["calc.py", "mathx.py"], DEFAULTS) == []


def test_an_empty_allow_list_flags_every_file_outside_the_task() -> None:
    touched = ["calc.py", "tests/test_calc.py"]
    assert out_of_scope(touched, ["calc.py"], []) == ["tests/test_calc.py"]


def test_a_configured_allow_list_replaces_the_defaults() -> None:
    touched = ["calc.py", "docs/calc.md", "tests/test_calc.py"]
    assert out_of_scope(touched, ["calc.py"], ["docs/**"]) == ["tests/test_calc.py"]


def test_a_task_without_files_has_no_scope_to_creep_out_of() -> None:
    assert out_of_scope(["README.md"], [], DEFAULTS) == []


@pytest.mark.parametrize("glob", ["", "  ", "!tests/**", "# tests"])
def test_a_glob_that_is_not_a_path_pattern_is_a_config_error(glob: str) -> None:
    with pytest.raises(ValidationError, match="not a glob of paths"):
        ScopeConfig(allow=["tests/**", glob])


def test_the_budget_counts_a_file_the_task_will_create_as_nothing(git_repo: Path) -> None:
    def base_tokens(files: list[str]) -> int:
        spec = TaskSpec(
            task_id="t",
            title="add sub",
            repo_path=str(git_repo),
            task_files=files,
            developer=RoleSpec("scripted", "scripted"),
        )
        outcome = check_budget(BudgetInput(spec))
        assert outcome.fits and outcome.refusal is None
        return outcome.base_tokens

    assert not (git_repo / "tests/test_sub.py").exists()
    assert base_tokens(["calc.py", "tests/test_sub.py"]) == base_tokens(["calc.py"])
