"""How big a task the default profile takes, told the same way by `models list`, `budget` and
the worker's budget check, on a real library file no one on the project wrote.

The file is ``rich/progress.py`` (1,700+ lines, ~13,000 cl100k tokens) from the installed
``rich`` package; commands run as ``python -m semspec`` with stdout a pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import rich.progress

from semspec.workflow.task.context_activities import check_budget
from semspec.workflow.task.messages import BudgetInput, RoleSpec
from tests.support.repos import make_repo
from tests.support.tasks import task_input

LIBRARY_FILE = Path(rich.progress.__file__)
LIMIT_LINE = "file token limit (the smaller)"


def semspec(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m semspec --repo REPO ARGS`` with no SEMSPEC_* variables, stdout a pipe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    return subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def library_repo(tmp_path: Path, config: str | None = None) -> Path:
    """A git repository holding the library file, committed, and an optional config."""
    text = LIBRARY_FILE.read_text(encoding="utf-8")
    assert 1_000 <= len(text.splitlines()) <= 2_500  # the size of file the issue is about
    repo = tmp_path / "repo"
    make_repo(repo, {"progress.py": text})
    if config is not None:
        (repo / ".semspec").mkdir()
        (repo / ".semspec" / "config.yaml").write_text(config, encoding="utf-8")
    return repo


def test_a_real_library_file_fits_the_default_profile(tmp_path: Path) -> None:
    repo = library_repo(tmp_path)
    done = semspec(repo, "budget", "--file", "progress.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: fits" in done.stdout
    assert done.stderr == ""


def test_models_list_budget_and_the_worker_give_one_file_limit(tmp_path: Path) -> None:
    repo = library_repo(tmp_path, "models:\n  developer: {context_window: 32000}\n")
    listed = json.loads(semspec(repo, "models", "list", "--json").stdout)
    in_list = next(m["file_token_limit"] for m in listed if m["id"] == "scripted")
    budget = json.loads(semspec(repo, "budget", "--file", "progress.py", "--json").stdout)
    # 32,000 - 2,000 system - 4,000 output - 6,400 margin = 19,600; 40% of it.
    assert in_list == budget["file_token_limit"] == 7_840
    shown = semspec(repo, "models", "list").stdout
    scripted_row = next(line for line in shown.splitlines() if "scripted " in line)
    assert "7,840" in scripted_row
    # The worker also counts the task's title and criteria: `budget --task-tokens` takes them.
    spec = task_input(repo, tmp_path / "unused.yaml", "p1").spec
    worker = check_budget(BudgetInput(replace(spec, task_files=["progress.py"])))
    task_tokens = next(line for line in worker.lines if "task context:" in line).split(": ")[1]
    in_worker = next(line for line in worker.lines if LIMIT_LINE in line).split(": ")[1]
    with_task = semspec(repo, "budget", "--file", "progress.py", "--task-tokens", task_tokens)
    assert f"{LIMIT_LINE}  " in with_task.stdout
    limit_row = next(line for line in with_task.stdout.splitlines() if LIMIT_LINE in line)
    assert limit_row.split()[-1] == in_worker


def test_a_refusal_names_the_setting_that_raises_the_file_limit(tmp_path: Path) -> None:
    repo = library_repo(tmp_path, "models:\n  developer: {context_window: 32000}\n")
    done = semspec(repo, "budget", "--file", "progress.py")
    assert done.returncode == 1
    assert "to raise the file limit:" in done.stdout
    assert "models.developer.context_window in .semspec/config.yaml" in done.stdout
    spec = replace(
        task_input(repo, tmp_path / "unused.yaml", "p2").spec, task_files=["progress.py"]
    )
    refused = check_budget(BudgetInput(spec))
    assert refused.refusal is not None
    assert "models.developer.context_window" in refused.refusal


def test_budget_sizes_a_model_of_the_users_own_server_as_the_worker_does(tmp_path: Path) -> None:
    role = "{provider: openai-compatible, model: fake-model, base_url: 'http://127.0.0.1:9/v1'}"
    repo = library_repo(tmp_path, f"models:\n  developer: {role}\n")
    done = semspec(repo, "budget", "--file", "progress.py", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["model"], data["profile"]) == ("fake-model", "scripted")
    assert "not in the registry" in data["note"]
    spec = task_input(repo, tmp_path / "unused.yaml", "p3").spec
    spec = replace(spec, task_files=["progress.py"], developer=RoleSpec("openai", "fake-model"))
    worker = check_budget(BudgetInput(spec))
    assert worker.window == data["window"]
    in_worker = next(line for line in worker.lines if LIMIT_LINE in line)
    assert in_worker.endswith(f": {data['file_token_limit']:,}")


def test_a_typo_in_the_model_option_is_still_refused(tmp_path: Path) -> None:
    repo = library_repo(tmp_path)
    done = semspec(repo, "budget", "--file", "progress.py", "--model", "gpt-4o-mnii")
    assert done.returncode != 0
    assert done.stderr.startswith("error: model 'gpt-4o-mnii' not found")
    assert "hint: did you mean gpt-4o-mini" in done.stderr
