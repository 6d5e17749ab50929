"""Task files at submit: existing files and files the task will create; never paths outside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import TaskSpecError
from semspec.workflow.task.messages import TaskInput
from tests.support.tasks import GOOD_CALC, write_script


def submit(repo: Path, *files: str) -> TaskInput:
    """``build_task_input`` as ``task submit`` calls it, with an approving script."""
    script = write_script(
        repo.parent / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
    )
    draft = TaskDraft(title="add sub", files=list(files), script=str(script))
    return build_task_input(draft, SemspecConfig(), repo)


def refusal(repo: Path, path: str) -> TaskSpecError:
    with pytest.raises(TaskSpecError) as caught:
        submit(repo, "calc.py", path)
    assert caught.value.field == "--file"
    return caught.value


def test_a_file_the_task_will_create_is_accepted_with_the_existing_ones(git_repo: Path) -> None:
    assert not (git_repo / "tests" / "unit").exists()
    inp = submit(git_repo, "calc.py", "tests/unit/test_sub.py", "mathx.py")
    assert inp.spec.task_files == ["calc.py", "mathx.py", "tests/unit/test_sub.py"]


def test_a_new_path_is_written_in_its_plain_repository_form(git_repo: Path) -> None:
    inp = submit(git_repo, "./tests/../tests/test_sub.py")
    assert inp.spec.task_files == ["tests/test_sub.py"]


def test_an_absolute_path_is_refused(git_repo: Path) -> None:
    error = refusal(git_repo, str(git_repo / "new.py"))
    assert "is an absolute path" in error.message
    assert error.hint == "write it relative to the repository root"


@pytest.mark.parametrize("path", ["../new.py", "tests/../../new.py", "."])
def test_a_path_that_leaves_the_repository_is_refused(git_repo: Path, path: str) -> None:
    error = refusal(git_repo, path)
    assert "outside the repository" in error.message or "repository itself" in error.message


def test_a_new_file_under_a_symlink_out_of_the_repository_is_refused(
    git_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, git_repo / "linked")
    assert "outside the repository" in refusal(git_repo, "linked/new.py").message
    assert not (outside / "new.py").exists()


@pytest.mark.parametrize("path", [".git/hooks/pre-commit", ".git/new", "sub/.git/x"])
def test_a_path_inside_git_is_refused(git_repo: Path, path: str) -> None:
    assert "inside .git" in refusal(git_repo, path).message


def test_a_symlink_into_git_is_refused(git_repo: Path) -> None:
    os.symlink(git_repo / ".git", git_repo / "meta")
    assert "inside .git" in refusal(git_repo, "meta/new").message


def test_a_path_inside_the_run_directory_is_refused(git_repo: Path) -> None:
    assert "run directory" in refusal(git_repo, ".semspec/run/worktrees/x.py").message


@pytest.mark.parametrize("path", ["tests", "tests/", "newdir/"])
def test_a_directory_is_refused(git_repo: Path, path: str) -> None:
    error = refusal(git_repo, path)
    assert "is a directory" in error.message
    assert error.hint == "name the files in it, one --file each"


def test_a_path_under_an_existing_file_is_refused(git_repo: Path) -> None:
    assert "calc.py is a file" in refusal(git_repo, "calc.py/new.py").message


def test_an_existing_path_that_is_not_a_regular_file_is_refused(git_repo: Path) -> None:
    os.mkfifo(git_repo / "pipe")
    assert "not a regular file" in refusal(git_repo, "pipe").message


def test_an_empty_path_is_refused(git_repo: Path) -> None:
    assert "empty path" in refusal(git_repo, "  ").message
