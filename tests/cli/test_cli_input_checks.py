"""Exit codes and errors a user meets before any service is involved, through the real CLI.

Each command runs as ``python -m semspec`` in a subprocess, as a user or a script runs it, so
the ``error:``/``hint:`` lines and the exit code are the ones ``main()`` produces.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_process import semspec

EXIT_TOO_LARGE = 1
EXIT_BAD_INPUT = 2


def flat(text: str) -> str:
    """Help text with rich's box drawing and line breaks folded into single spaces."""
    return re.sub(r"[\s│]+", " ", text)


def large_task(folder: Path) -> list[str]:
    """``--file`` arguments for six files: more than the four a task may hold."""
    args = []
    for number in range(6):
        path = folder / f"m{number}.py"
        path.write_text(f"value_{number} = 1\n" * 300, encoding="utf-8")
        args += ["--file", str(path)]
    return args


def test_budget_exits_1_when_the_task_is_too_large(git_repo: Path) -> None:
    done = semspec("--repo", str(git_repo), "budget", *large_task(git_repo))
    assert done.returncode == EXIT_TOO_LARGE, done.stderr
    assert "verdict: too_large" in done.stdout


def test_budget_json_exits_1_when_the_task_is_too_large(git_repo: Path) -> None:
    done = semspec("--repo", str(git_repo), "budget", *large_task(git_repo), "--json")
    assert done.returncode == EXIT_TOO_LARGE, done.stderr
    assert json.loads(done.stdout)["verdict"] == "too_large"


def test_budget_exits_0_when_the_task_fits(git_repo: Path) -> None:
    done = semspec("--repo", str(git_repo), "budget", "--file", "calc.py")
    assert done.returncode == 0, done.stderr
    assert "verdict: fits" in done.stdout


def test_task_list_rejects_an_unknown_state_naming_the_valid_ones(git_repo: Path) -> None:
    done = semspec("--repo", str(git_repo), "task", "list", "--state", "finished")
    assert done.returncode == EXIT_BAD_INPUT
    error, hint = done.stderr.splitlines()[:2]
    assert error == "error: --state 'finished' is not a task state"
    assert hint.startswith("hint: use one of: running, escalated, completed, failed, cancelled")


def test_init_outside_a_git_repository_is_an_error_with_a_hint(tmp_path: Path) -> None:
    done = semspec("init", str(tmp_path))
    assert done.returncode == EXIT_BAD_INPUT
    error, hint = done.stderr.splitlines()[:2]
    assert error == f"error: {tmp_path} is not in a git repository"
    assert hint.startswith(f"hint: semspec works on git branches: run `git init {tmp_path}`")
    assert not (tmp_path / ".semspec").exists()


def test_init_without_a_path_initialises_the_repo_option(git_repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = semspec("--repo", str(git_repo), "init", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (git_repo / ".semspec" / "config.yaml").is_file()
    assert not (elsewhere / ".semspec").exists()


def test_a_repo_option_naming_a_missing_folder_is_an_error_with_a_hint(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    done = semspec("--repo", str(missing), "config", "show")
    assert done.returncode == EXIT_BAD_INPUT
    error, hint = done.stderr.splitlines()[:2]
    assert error == f"error: --repo {missing}: no such directory"
    assert hint.startswith("hint: pass the path of an existing repository")


def test_a_repo_option_naming_a_file_says_it_is_not_a_directory(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x\n", encoding="utf-8")
    done = semspec("--repo", str(a_file), "config", "show")
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.splitlines()[0] == f"error: --repo {a_file}: is a file, not a directory"


def test_a_repo_option_naming_a_path_the_os_refuses_is_one_error_line(tmp_path: Path) -> None:
    too_long = tmp_path / ("r" * 300)  # longer than a file name may be: ENAMETOOLONG
    done = semspec("--repo", str(too_long), "config", "show")
    assert done.returncode == EXIT_BAD_INPUT
    error, hint = done.stderr.splitlines()
    assert error == f"error: --repo {too_long}: File name too long"
    assert hint.startswith("hint: pass the path of an existing repository")


def test_extra_retries_help_says_what_zero_grants() -> None:
    done = semspec("escalations", "resolve", "--help")
    assert done.returncode == 0, done.stderr
    assert "0 (the default) raises it by loop.max_retries" in flat(done.stdout)


def test_script_help_of_task_submit_points_at_the_scripted_agent_doc() -> None:
    done = semspec("task", "submit", "--help")
    assert done.returncode == 0, done.stderr
    assert "(format: docs/scripted-agent.md)" in flat(done.stdout)


TOO_LONG = "n" * 300
"""Longer than a file name may be: the system answers ENAMETOOLONG."""


@pytest.mark.parametrize(
    "args",
    [
        ["budget", "--file", TOO_LONG],
        ["models", "assign", "--role", "developer", "--file", TOO_LONG],
        ["init", TOO_LONG],
        ["monitor", "--repo", TOO_LONG, "state"],
        ["task", "submit", "-f", TOO_LONG],
        ["task", "submit", "A title", "--file", TOO_LONG, "--criterion", "it works"],
        ["plan", "submit", TOO_LONG],
        ["review", "context", "--file", TOO_LONG],
        ["index", "pack", "--file", TOO_LONG],
    ],
    ids=lambda args: " ".join(a for a in args if a != TOO_LONG),
)
def test_a_path_argument_the_os_refuses_is_one_error_line(git_repo: Path, args: list[str]) -> None:
    done = semspec(*args, cwd=git_repo)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert "Traceback" not in done.stderr
    error = done.stderr.splitlines()[0]
    assert error.startswith("error: ") and error.endswith(f"{TOO_LONG}: File name too long")


def test_monitor_events_names_the_kinds_when_one_is_unknown(git_repo: Path) -> None:
    done = semspec("--repo", str(git_repo), "monitor", "events", "--kind", "stepz")

    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert "--kind 'stepz' is not one of iteration, gate" in flat(done.stderr)
    assert "Traceback" not in done.stderr


# ----- inputs checked when given (issue 30, item 5) ---------------------------------------------


def test_a_missing_script_is_refused_even_when_no_role_is_scripted(git_repo: Path) -> None:
    role = "{provider: openai, model: gpt-4o}"
    config = git_repo / ".semspec" / "config.yaml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f"models:\n  developer: {role}\n  reviewer: {role}\n", encoding="utf-8")
    done = semspec(
        "--repo", str(git_repo), "task", "submit", "A title", "--file", "calc.py",
        "--criterion", "it works", "--script", "nope.yaml",
    )  # fmt: skip
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    error, hint = done.stderr.splitlines()
    assert error.startswith("error: ") and "nope.yaml" in error and "not found" in error
    assert hint.startswith("hint: ")


def test_a_repository_with_no_commit_is_told_to_make_a_first_commit(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    done = semspec(
        "--repo", str(tmp_path), "task", "submit", "A title", "--file", "calc.py",
        "--criterion", "it works",
    )  # fmt: skip
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    error, hint = done.stderr.splitlines()
    assert error == f"error: --repo: {tmp_path} has no commit yet: a task starts from a commit " + (
        "of its base branch"
    )
    assert hint.startswith("hint: make a first commit")
    assert "base_branch" not in hint


@pytest.mark.parametrize(("command", "kind"), [("task", "task"), ("plan", "plan")])
def test_a_missing_task_or_plan_file_has_a_hint(git_repo: Path, command: str, kind: str) -> None:
    args = ["-f", "missing.yaml"] if command == "task" else ["missing.yaml"]
    done = semspec("--repo", str(git_repo), command, "submit", *args, cwd=git_repo)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    error, hint = done.stderr.splitlines()
    assert error.endswith(f"{kind} file missing.yaml not found")
    assert hint == (
        "hint: check the path (relative to the current directory); the format of a "
        f"{kind} file is in docs/{kind}-yaml.md"
    )
